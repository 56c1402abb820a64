"""Attacks on the shared build cache through kforge's builder (sandboxed_build.main, as the broker runs
it: one process per request, JSON on stdin, the reply on fd 3): one evaluation asking for library after
library (each up to the old 1 GiB cap: 768 MiB in 12 s), a message left in a cached source for a later
candidate, and a cache that grows without end over a run. The compiler runs unsandboxed here (no
"sandbox" in the request); what is checked is what the builder installs."""

import json
import os
import subprocess
import sys
import time

import pytest

from kforge_worker.builder import build_store, sandboxed_build

WORKER = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(sandboxed_build.__file__))))
MIB = 1 << 20


def _big_source(tag: int, mib: int) -> str:
    """A library of about ``mib`` MiB (an initialised array), distinct per ``tag``."""
    return (f"// message for the next candidate: {tag}\n"
            f'extern "C" {{ char kforge_filler_{tag}[{mib} << 20] = {{{tag + 1}}}; '
            f"int twice(int x) {{ return 2 * x + kforge_filler_{tag}[0] - {tag + 1}; }} }}\n")


def _build(tmp_path, source: str, quota: bool = True, budget_gb: str = "8") -> dict:
    build_dir = tmp_path / f"build-{time.monotonic_ns()}"
    build_dir.mkdir()
    request = {"request": {"kind": "native", "source": source, "name": "filler"}, "sandbox": [],
               "build_dir": str(build_dir), "timeout": 120}
    if quota:
        request["quota_file"] = str(tmp_path / "build-quota.json")
    env = dict(os.environ, PYTHONPATH=WORKER, KFORGE_RESPONSE_FD="1", KFORGE_BUILD_CACHE=str(tmp_path / "cache"),
               KFORGE_BUILD_CACHE_MAX_GB=budget_gb)
    r = subprocess.run([sys.executable, "-m", "kforge_worker.builder.sandboxed_build"], input=json.dumps(request) + "\n",
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout)


def _cache_bytes(tmp_path) -> int:
    root = tmp_path / "cache"
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file()) if root.exists() else 0


def test_one_evaluation_cannot_fill_the_cache_with_library_after_library(tmp_path):
    """Eight libraries at most, and no more than 512 MiB together, per evaluation: 100 MiB libraries
    stop at the sixth; the cache holds at most what the quota allowed."""
    replies = [_build(tmp_path, _big_source(i, 100)) for i in range(7)]
    assert [r["ok"] for r in replies] == [True] * 5 + [False] * 2, [r.get("error") for r in replies]
    assert "build quota" in replies[5]["error"]
    assert _cache_bytes(tmp_path) <= sandboxed_build.MAX_INSTALL_BYTES + 10 * MIB


def test_the_count_of_libraries_per_evaluation_is_bounded(tmp_path):
    replies = [_build(tmp_path, f'extern "C" int f{i}(int x) {{ return x + {i}; }}\n') for i in range(10)]
    assert [r["ok"] for r in replies] == [True] * sandboxed_build.MAX_INSTALLS + [False] * 2
    assert "8 libraries built" in replies[-1]["error"]
    # A cache hit installs nothing and costs nothing.
    assert _build(tmp_path, 'extern "C" int f0(int x) { return x + 0; }\n')["hit"]


def test_a_message_in_a_source_is_not_kept_where_a_later_candidate_reads(tmp_path):
    secret = "kforge-message-7f3a for whoever comes next"
    reply = _build(tmp_path, f'// {secret}\nextern "C" int g(int x) {{ return x; }}\n', quota=False)
    assert reply["ok"], reply
    cached = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.parent.name != "compilers"]
    assert [p.suffix for p in cached] == [".so"], cached  # (compilers/: the compiler's identity, kforge's)
    assert all(secret.encode() not in p.read_bytes() for p in cached)


def test_the_shared_cache_keeps_within_its_budget_by_evicting_the_least_recently_used(tmp_path):
    """A 150 MiB budget and 60 MiB libraries: the oldest go (once idle), the newest stays."""
    made = []
    for i in range(4):
        reply = _build(tmp_path, _big_source(i, 60), quota=False, budget_gb=str(150 / 1024))
        assert reply["ok"], reply
        made.append(reply["path"])
        old = time.time() - build_store.IDLE_S - 100 + i  # as if used a while ago, in this order
        os.utime(reply["path"], (old, old))
    assert _cache_bytes(tmp_path) <= 150 * MIB
    assert os.path.exists(made[-1])
    assert not os.path.exists(made[0])
