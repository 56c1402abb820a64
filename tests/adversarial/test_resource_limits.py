"""Candidates that take resources no limit counted, or leave a channel to the next candidate
(docs/isolation.md, "Quotas and cleanup"): tasks, inodes, open files, folders nested past PATH_MAX,
the kernel's keyrings. Each runs through `kforge eval` and is checked like the attacks of
test_sandbox_attacks.py: the status and check, what the sandbox answered ("attack blocked: ..."),
and the host facts (caches and project unchanged, no folder or process left, no key left)."""

import os
from pathlib import Path

import pytest

from adversarial_support import HERE
from test_sandbox_attacks import ATTACKS, Host, _assert_blocked, _honest, _sandboxed

pytestmark = pytest.mark.skipif(not _sandboxed(), reason="bubblewrap is not installed: these attacks need the sandbox")

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's own uid (and so its task and inode limits) "
                                                          "needs kforge to run as root")

# attack -> what the system answers inside the sandbox.
LIMITED = {
    "many_threads": "Resource temporarily unavailable",  # RLIMIT_NPROC of the sandbox's uid
    "many_files": "No space left on device",  # the inode count of its /tmp
    "many_open_files": "Too many open files",  # RLIMIT_NOFILE
}


def _keys_of_uid(uid: int) -> int:
    """Keys the kernel holds for `uid` (/proc/key-users: "uid: usage nkeys/nikeys ...")."""
    for line in Path("/proc/key-users").read_text().splitlines():
        head, rest = line.split(":", 1)
        if int(head) == uid:
            return int(rest.split()[1].split("/")[0])
    return 0


@ROOT_ONLY
@pytest.mark.parametrize("name", sorted(LIMITED))
def test_a_limit_stops_the_attack(kforge, name):
    host = Host(kforge)
    proc, result = host.eval(ATTACKS / f"{name}.py")
    assert result is not None, proc.stdout + proc.stderr
    _assert_blocked(result, LIMITED[name])
    host.assert_untouched()  # no process of the evaluation (the threads' process included) is left
    assert _honest(host)["status"] == "correct"  # the next candidate is not starved


def test_empty_files_in_its_own_folder_count_against_its_quota(kforge):
    """400,000 empty files on the host's disk: 0 bytes, but past the inode quota."""
    host = Host(kforge)
    proc, result = host.eval(ATTACKS / "many_own_files.py")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected", {"status": result["status"], "error": result.get("error")}
    assert any(c["name"] == "disk_quota" and c["verdict"] == "fail" for c in result["checks"]), result["checks"]
    assert "files and folders" in result["error"]["message"]
    host.assert_untouched()


def test_a_tree_nested_past_path_max_is_measured_and_removed(kforge):
    """60 MiB under 21,000 nested folders: the quota sees them (it walked paths, and gave up past
    PATH_MAX), and nothing is left on the host."""
    host = Host(kforge, tmp_gb=0.05)
    proc, result = host.eval(ATTACKS / "deep_tree.py")
    assert result is not None, proc.stdout + proc.stderr
    assert result["status"] == "rejected", {"status": result["status"], "error": result.get("error")}
    assert any(c["name"] == "disk_quota" and c["verdict"] == "fail" for c in result["checks"]), result["checks"]
    host.assert_untouched()


def _bury(top: Path, depth: int) -> None:
    top.mkdir()
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir("d", dir_fd=fd)
        deeper = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    with open(os.open("buried", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd), "wb") as f:
        f.write(b"x" * (1 << 20))
    os.close(fd)


def test_the_sweep_of_stale_folders_removes_a_tree_nested_past_path_max(kforge):
    """A killed run's folder holding 21,000 nested folders (what deep_tree leaves when kforge dies
    mid-evaluation) is gone after the next run's sweep."""
    host = Host(kforge)
    stale = host.tmp / "kforge-eval-999999999-deep"  # no such process
    _bury(stale, 21000)
    _honest(host)
    assert not stale.exists(), "the stale folder is still there"
    host.assert_untouched()


def test_a_key_left_in_the_keyring_reaches_no_later_candidate(kforge):
    """The first candidate adds keys to its user and session keyrings, the second (same sandbox uid,
    its process started while the first ran) looks for them: both are refused, no key is left."""
    host = Host(kforge)
    uid = 65534 if os.geteuid() == 0 else os.geteuid()
    before = _keys_of_uid(uid)
    evaluations = host.eval_several(ATTACKS / "keyring_plant.py", ATTACKS / "keyring_probe.py")
    _assert_blocked(evaluations[0], "Operation not permitted")
    _assert_blocked(evaluations[1], "Operation not permitted")
    assert _keys_of_uid(uid) == before, "keys of the sandbox's uid were left in the kernel"
    host.assert_untouched()


def test_memory_files_count_against_the_candidates_memory_limit(kforge):
    """2 GiB of memfds kept open, under a 1 GiB limit: the candidate's memory cgroup counts their
    pages (no RLIMIT does), the kernel ends it, and the verdict says which limit it passed."""
    host = Host(kforge, memory_gb=1)
    proc, result = host.eval(ATTACKS / "memfd_beyond_memory.py")
    assert result is not None, proc.stdout + proc.stderr
    limit = result["env"].get("memory_limit", {})
    if limit.get("bytes") is None:
        pytest.skip(f"no memory cgroup on this machine ({limit.get('by')})")
    assert limit == {"bytes": 1 << 30, "by": "memory cgroup"}
    assert result["status"] == "runtime_error", {"status": result["status"], "error": result.get("error")}
    assert result["error"]["kind"] == "memory_limit", result["error"]
    assert "memory limit of 1 GiB" in result["error"]["message"]
    host.assert_untouched()
    assert _honest(host)["status"] == "correct"  # an honest candidate fits under the same limit
