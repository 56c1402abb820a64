"""`kforge bench --executor ray` on a real Ray cluster on this machine: a head and a second node, each
a separate raylet with one CPU and its own `kforge_cpu` unit (standing in for two machines), shared by
the tests of this module (Ray takes ~15 s per node to start on two busy cores). The tests check that
the report equals the local executor's, that a Ray worker killed mid-bench loses and repeats nothing,
that an API key in kforge's environment never reaches Ray, and that a bench without --ray-address
starts its own Ray instance and leaves nothing running; and the same for a `--llm` bench, whose runs
(a scripted model, on the driver) send every evaluation through the cluster.

Every Ray process started here lives in a process group of its own, killed at the end: `ray stop`
would also stop other Ray instances of this user."""

import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

from e2e_support import HERE, ROOT, Kforge, cpu_candidates_without

pytestmark = pytest.mark.xdist_group("ray")  # one cluster: every test of this module on one xdist worker

PROBLEMS = ROOT / "examples" / "problems"
CPU_CANDIDATES = cpu_candidates_without("13_channel_norm")  # a problem without a candidate
QUICK = ["--no-compile-baseline", "--eval-reps", "3", "--eval-warmup", "1", "--eval-trials", "2", "--seed", "11"]
# A subset of the bundled problems with every status they reach on the cpu target (correct; no
# candidate), a tuple output and a problem without batch_size: all of them cost minutes on two cores.
SUBSET = ["01_relu", "13_channel_norm", "14_mean_std_tuple"]
CANARY = "sk-kforge-canary-7f3c9e21d4b8"
SECRETS = {"OPENAI_API_KEY": CANARY, "ANTHROPIC_API_KEY": CANARY + "-a", "HF_TOKEN": CANARY + "-t"}
RAY = Path(sys.executable).parent / "ray"
# A problem with a cpu candidate, and one without, which the scripted model answers with another
# problem's program (it fails). Two rounds: the second candidate of 01_relu is timed head to head
# against the best.
LLM_SUITE = ["01_relu", "13_channel_norm"]
LLM_SETTINGS = ["--rounds", "2", "--max-fix", "0"]


def ray_installed() -> bool:
    return subprocess.run([sys.executable, "-c", "import ray"], capture_output=True).returncode == 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def processes_mentioning(text: str) -> list:
    """PIDs whose command line contains `text` (Ray's processes carry their temp dir in theirs)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text in (entry / "cmdline").read_bytes().decode(errors="replace"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def stop_process_groups(groups, temp: Path):
    for sig, pause in [(signal.SIGTERM, 5), (signal.SIGKILL, 1)]:
        for pgid in groups:
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                pass
        time.sleep(pause)
    for pid in processes_mentioning(str(temp)):  # anything that left its group
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def secrets_in(root: Path) -> list:
    hits = []
    for path in root.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if CANARY.encode() in path.read_bytes():
                    hits.append(str(path))
            except OSError:
                pass
    return hits


class RayCluster:
    """Two Ray nodes on this machine, each started by `ray start --block` in its own process group."""

    def __init__(self, base: Path):
        # A short path: Ray's socket paths live under it and must stay within 107 characters.
        self.temp = Path(tempfile.mkdtemp(prefix="kfray", dir="/tmp"))
        self.base = base
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.groups, self.logs = [], []
        self.env = {k: v for k, v in os.environ.items() if k not in SECRETS}
        # What kforge would find on a node: its caches, and a state folder of its own.
        self.env.setdefault("KFORGE_CACHE_DIR", str(ROOT / "build" / "test-cache"))
        self.env["KFORGE_STATE_DIR"] = str(base / "node-state")
        self.env["RAY_USAGE_STATS_ENABLED"] = "0"
        # Token authentication with a token of its own (not the user's ~/.ray/auth_token); kforge is
        # given the same two variables, as a user of an authenticated cluster would be.
        token = self.temp / "auth_token"
        token.write_text(uuid.uuid4().hex)
        self.auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
        self.env.update(self.auth)

    def start_node(self, name: str, head: bool):
        log = self.base / f"ray-{name}.log"
        where = ["--head", "--port", str(self.port), "--include-dashboard", "false"] if head else ["--address",
                                                                                                   self.address]
        proc = subprocess.Popen([str(RAY), "start", "--block", *where, "--node-ip-address", "127.0.0.1",
                                 "--temp-dir", str(self.temp), "--num-cpus", "1", "--object-store-memory",
                                 str(80 << 20), "--resources", json.dumps({"kforge_cpu": 1, f"kforge_{name}": 1})],
                                stdout=open(log, "w"), stderr=subprocess.STDOUT, env=self.env,
                                start_new_session=True)
        self.groups.append(proc.pid)
        self.logs.append(log)
        deadline = time.time() + 240
        while "Ray runtime started" not in log.read_text():
            if proc.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"ray start ({name}) failed:\n{log.read_text()[-3000:]}")
            time.sleep(0.5)

    def raylets(self) -> list:
        return [pid for pid in processes_mentioning(str(self.temp)) if "raylet/raylet" in cmdline(pid)]

    def stop(self):
        stop_process_groups(self.groups, self.temp)


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    if not ray_installed():
        pytest.skip("the ray package is not installed (pip install -r worker/requirements-ray.txt; scripts/setup.sh does)")
    cluster = RayCluster(tmp_path_factory.mktemp("ray"))
    try:
        cluster.start_node("head", head=True)
        cluster.start_node("second", head=False)
        yield cluster
    finally:
        cluster.stop()
    leftovers = [cmdline(p) for p in processes_mentioning(str(cluster.temp))]
    assert not leftovers, leftovers


def kforge_with_secrets(kforge_bin, tmp: Path, cluster: RayCluster = None) -> Kforge:
    k = Kforge(kforge_bin, tmp)
    k.env.update(SECRETS)  # the driver's keys: they must stay here
    if cluster:
        k.env.update(cluster.auth)
    return k


def write_suite(tmp: Path, names) -> Path:
    suite = tmp / "suite.txt"
    suite.write_text("".join(f"{PROBLEMS / n}.py\n" for n in names))
    return suite


def scripted_model(log: Path) -> str:
    """The scripted model of tests/e2e/test_bench.py: each problem's bundled cpu candidate."""
    return f"exec:{sys.executable} {HERE / 'scripted' / 'bench_model.py'} {CPU_CANDIDATES} {log}"


def model_calls(log: Path) -> list:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def evaluation_logs(state: Path) -> list:
    """Files that evaluations in a run's own process leave in its folder (state/runs/N/logs/STEP/)."""
    return [p for p in (state / "runs").glob("*/logs/*/**/*") if p.is_file()]


def statuses(report_json: Path) -> dict:
    return {p["name"]: p["status"] for p in json.loads(report_json.read_text())["problems"]}


@pytest.fixture(scope="module")
def ray_examples_bench(ray_cluster, kforge_bin, tmp_path_factory):
    """The bundled cpu candidates over SUBSET of the bundled problems, once through the Ray cluster."""
    k = kforge_with_secrets(kforge_bin, tmp_path_factory.mktemp("ray-examples"), ray_cluster)
    proc = k.run("bench", write_suite(k.tmp, SUBSET), "--target", "cpu", "--candidates", CPU_CANDIDATES, "--executor", "ray",
                 "--ray-address", ray_cluster.address, "--out", k.tmp / "out", *QUICK, timeout=1200)
    return k, proc


@pytest.fixture(scope="module")
def ray_llm_bench(ray_cluster, kforge_bin, tmp_path_factory):
    """The scripted model over LLM_SUITE, each run's evaluations through the Ray cluster."""
    k = kforge_with_secrets(kforge_bin, tmp_path_factory.mktemp("ray-llm"), ray_cluster)
    log = k.tmp / "calls.jsonl"
    proc = k.run("bench", write_suite(k.tmp, LLM_SUITE), "--target", "cpu", "--llm", scripted_model(log),
                 *LLM_SETTINGS, "--executor", "ray", "--ray-address", ray_cluster.address, "--out", k.tmp / "out",
                 *QUICK, timeout=1200)
    return k, proc, log


def test_ray_report_equals_the_local_executors(ray_examples_bench, kforge_bin, tmp_path):
    k, proc = ray_examples_bench
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert "2 nodes" in proc.stderr, proc.stderr[-3000:]
    local = Kforge(kforge_bin, tmp_path)
    lp = local.run("bench", write_suite(tmp_path, SUBSET), "--target", "cpu", "--candidates", CPU_CANDIDATES, "--jobs", "1", "--out",
                   tmp_path / "out", *QUICK, timeout=1200)
    assert lp.returncode == 0, lp.stdout + lp.stderr[-5000:]
    on_ray, here = statuses(k.tmp / "out" / "report.json"), statuses(tmp_path / "out" / "report.json")
    assert on_ray == here
    assert list(on_ray) == SUBSET
    assert "correct" in on_ray.values() and "no_candidate" in on_ray.values()

    # Every evaluation came back into the driver's store exactly once, with the node it ran on.
    report = json.loads((k.tmp / "out" / "report.json").read_text())
    con = sqlite3.connect(k.tmp / "state" / "kforge.db")
    ids = [i for (i,) in con.execute("SELECT evaluation_id FROM bench_problems WHERE evaluation_id > 0")]
    assert len(ids) == len(set(ids)) == sum(1 for s in on_ray.values() if s != "no_candidate")
    nodes = set(re.findall(r"\[([^\]\s]+/[0-9a-f]{8})\]", proc.stderr))
    assert 1 <= len(nodes) <= 2, proc.stderr[-3000:]
    for p in report["problems"]:
        assert p["status"] == "no_candidate" or p["evaluation_id"] in ids


def test_llm_bench_on_ray_equals_the_local_executors(ray_llm_bench, kforge_bin, tmp_path):
    k, proc, log = ray_llm_bench
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    local = Kforge(kforge_bin, tmp_path)
    lp = local.run("bench", write_suite(tmp_path, LLM_SUITE), "--target", "cpu", "--llm",
                   scripted_model(tmp_path / "calls.jsonl"), *LLM_SETTINGS, "--jobs", "1", "--out", tmp_path / "out",
                   *QUICK, timeout=1200)
    assert lp.returncode == 0, lp.stdout + lp.stderr[-5000:]
    on_ray, here = statuses(k.tmp / "out" / "report.json"), statuses(tmp_path / "out" / "report.json")
    assert on_ray == here == {"01_relu": "correct", "13_channel_norm": "no_correct_candidate"}

    # The runs evaluated nothing in their own process (the local bench's runs did), and each finished
    # problem names the Ray node of its latest evaluation.
    assert evaluation_logs(tmp_path / "state"), "the local bench's runs left no evaluation logs to compare with"
    assert not evaluation_logs(k.tmp / "state")
    assert re.search(r"01_relu: correct.*\[[^\]\s]+/[0-9a-f]{8}\]", proc.stderr), proc.stderr[-3000:]

    con = sqlite3.connect(k.tmp / "state" / "kforge.db")
    # Round 2's candidate of 01_relu was timed head to head against the best, on Ray, and judged.
    keeps = [json.loads(d)["keep"] for (d,) in con.execute(
        "SELECT d.detail_json FROM decisions d JOIN bench_problems b ON b.run_id = d.run_id "
        "WHERE b.name = '01_relu' AND d.round = 1 AND d.kind IN ('accepted', 'rejected', 'undecided')")]
    assert len(keeps) == 1 and keeps[0]["measurements"] >= 1 and keeps[0]["outcome"] != "failed", keeps
    # Every model call was made once, on the driver, and stored once.
    calls = model_calls(log)
    assert con.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0] == len(calls) > 0
    # Every evaluation came back into the store once, under its step.
    assert (con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
            == con.execute("SELECT COUNT(*) FROM run_evaluations").fetchone()[0] > 0)


def test_killed_llm_bench_on_ray_resumes_without_repeating(ray_cluster, kforge_bin, tmp_path):
    names = ["01_relu", "12_swish"]
    k = kforge_with_secrets(kforge_bin, tmp_path, ray_cluster)
    log = tmp_path / "calls.jsonl"
    with open(tmp_path / "bench.out", "w") as out:
        bench = subprocess.Popen([str(kforge_bin), "bench", write_suite(tmp_path, names), "--target", "cpu", "--llm",
                                  scripted_model(log), "--rounds", "1", "--max-fix", "0", "--jobs", "1",
                                  "--executor", "ray", "--ray-address", ray_cluster.address, "--out", tmp_path / "out",
                                  *QUICK], cwd=tmp_path, env=k.env, stdout=out, stderr=subprocess.STDOUT)
    db = tmp_path / "state" / "kforge.db"
    done = lambda: sqlite3.connect(db).execute("SELECT COUNT(*) FROM bench_problems WHERE status = 'done'").fetchone()[0]
    try:
        deadline = time.time() + 600
        while not (db.exists() and done() >= 1) and time.time() < deadline and bench.poll() is None:
            time.sleep(0.2)
        # The second problem's evaluation on the cluster (after its model call was stored): kill the bench now.
        running = evaluation_running_on(ray_cluster, timeout_s=300)
        assert running, "no evaluation of the second problem started on the Ray cluster:\n" + (tmp_path / "bench.out").read_text()[-3000:]
    finally:
        bench.kill()
        bench.wait()
    con = sqlite3.connect(db)
    assert done() == 1, (tmp_path / "bench.out").read_text()[-3000:]
    stored = set(con.execute("SELECT run_id, step, evaluation_id FROM run_evaluations"))
    calls_before = con.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0]
    assert calls_before == len(model_calls(log)) == 2  # the second run's call was made before its evaluation

    resumed = k.run("bench", "--resume", "1", timeout=900)  # the stored executor and cluster
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr[-5000:]
    assert statuses(tmp_path / "out" / "report.json") == dict.fromkeys(names, "correct")
    con = sqlite3.connect(db)
    assert {s for (s,) in con.execute("SELECT status FROM runs")} == {"finished"}
    # No model call repeated, every evaluation stored before the kill kept, each step stored once.
    assert [c["problem"] for c in model_calls(log)].count("12_swish") == 1
    assert con.execute("SELECT COUNT(*) FROM llm_calls").fetchone()[0] == calls_before
    after = set(con.execute("SELECT run_id, step, evaluation_id FROM run_evaluations"))
    assert stored < after
    assert {run for run, _, _ in after} == {run for (run,) in con.execute("SELECT id FROM runs")}
    assert con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == len(after)


def test_report_and_resume_read_the_ray_bench_from_the_store(ray_examples_bench):
    k, proc = ray_examples_bench
    bench = re.search(r"bench (\d+)", proc.stdout).group(1)
    again = k.run("report", f"bench-{bench}", "--format", "json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout) == json.loads((k.tmp / "out" / "report.json").read_text())
    count = sqlite3.connect(k.tmp / "state" / "kforge.db").execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
    resumed = k.run("bench", "--resume", bench, timeout=300)  # the stored executor and address
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert sqlite3.connect(k.tmp / "state" / "kforge.db").execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == count


def evaluation_running_on(cluster: RayCluster, timeout_s: float):
    """(Ray worker pid, kforge eval-request pid) of an evaluation running on the cluster."""
    deadline = time.time() + timeout_s
    raylets = set(cluster.raylets())
    while time.time() < deadline:
        for pid in processes_mentioning("eval-request"):
            try:
                worker = parent_of(pid)
                if cmdline(worker).startswith("ray::") and parent_of(worker) in raylets:
                    return worker, pid
            except (OSError, IndexError, ValueError):
                pass
        time.sleep(0.05)
    return None


def test_a_killed_ray_worker_loses_and_repeats_nothing(ray_cluster, kforge_bin, tmp_path):
    names = ["01_relu", "12_swish"]
    k = kforge_with_secrets(kforge_bin, tmp_path, ray_cluster)
    bench = subprocess.Popen([str(kforge_bin), "bench", write_suite(tmp_path, names), "--target", "cpu",
                              "--candidates", CPU_CANDIDATES, "--executor", "ray", "--ray-address",
                              ray_cluster.address, "--out", tmp_path / "out", *QUICK], cwd=tmp_path, env=k.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = {}
    reader = threading.Thread(target=lambda: out.update(zip(["stdout", "stderr"], bench.communicate(timeout=900))))
    reader.start()
    running = evaluation_running_on(ray_cluster, timeout_s=300)
    assert running, "no evaluation started on the Ray cluster"
    worker, child = running
    os.kill(worker, signal.SIGKILL)
    reader.join()
    assert bench.returncode == 0, out.get("stdout", "") + out.get("stderr", "")[-5000:]
    assert not Path(f"/proc/{child}").exists() or "eval-request" not in cmdline(child)  # died with its worker

    assert statuses(tmp_path / "out" / "report.json") == dict.fromkeys(names, "correct")
    con = sqlite3.connect(tmp_path / "state" / "kforge.db")
    # A check and a timing per problem (split CPU scheduling), each stored once: the killed one was
    # re-run by Ray and recorded only when it finished.
    rows = con.execute("SELECT check_evaluation_id, evaluation_id FROM bench_problems").fetchall()
    ids = [i for row in rows for i in row]
    assert all(i > 0 for i in ids) and len(set(ids)) == len(ids) == 2 * len(names)
    assert con.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0] == 2 * len(names)


def test_api_keys_never_reach_the_ray_cluster(ray_examples_bench, ray_llm_bench, ray_cluster):
    k, proc = ray_examples_bench
    assert proc.returncode == 0
    # The --llm bench's driver held the keys too (its runs call the model with them).
    _, llm_proc, log = ray_llm_bench
    assert llm_proc.returncode == 0 and model_calls(log)
    # Logs, session files and spilled objects of the cluster the bench used...
    assert not secrets_in(ray_cluster.temp)
    # ...and the job table (each driver's job config and runtime environment).
    jobs = subprocess.run([sys.executable, "-c", "import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False);"
                           "from ray._private import state; print(repr(state.jobs()))", ray_cluster.address],
                          capture_output=True, text=True, timeout=180, env=ray_cluster.env)
    assert jobs.returncode == 0, jobs.stderr[-3000:]
    assert "kforge" in jobs.stdout and CANARY not in jobs.stdout


def test_without_an_address_kforge_starts_its_own_ray_and_stops_it(kforge_bin, tmp_path):
    if not ray_installed():
        pytest.skip("the ray package is not installed (pip install -r worker/requirements-ray.txt; scripts/setup.sh does)")
    k = kforge_with_secrets(kforge_bin, tmp_path)
    ray_tmp = Path(tempfile.mkdtemp(prefix="kfray", dir="/tmp"))
    k.env["RAY_TMPDIR"] = str(ray_tmp)  # where the local instance keeps its session, to inspect it after
    try:
        proc = k.run("bench", write_suite(tmp_path, ["12_swish"]), "--target", "cpu", "--candidates", CPU_CANDIDATES,
                     "--executor", "ray", "--out", tmp_path / "out", *QUICK, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
        assert "started here" in proc.stderr
        assert statuses(tmp_path / "out" / "report.json") == {"12_swish": "correct"}
        assert list(ray_tmp.rglob("session_*")), "the local Ray instance did not use RAY_TMPDIR"
        assert not processes_mentioning(str(ray_tmp)), "Ray processes left running"
        assert not secrets_in(ray_tmp)
    finally:
        stop_process_groups([], ray_tmp)


def test_ray_executor_refuses_what_it_cannot_do_safely(kforge_bin, tmp_path):
    k = Kforge(kforge_bin, tmp_path)
    suite = write_suite(tmp_path, ["12_swish"])
    no_sandbox = k.run("bench", suite, "--target", "cpu", "--candidates", CPU_CANDIDATES, "--executor", "ray",
                       "--no-sandbox")
    assert no_sandbox.returncode == 2 and "sandbox" in no_sandbox.stderr
    devices = k.run("bench", suite, "--target", "cpu", "--candidates", CPU_CANDIDATES, "--executor", "ray",
                    "--device", "cpu")
    assert devices.returncode == 2 and "--device" in devices.stderr
    unknown = k.run("bench", suite, "--target", "cpu", "--candidates", CPU_CANDIDATES, "--executor", "slurm")
    assert unknown.returncode == 2 and "executor" in unknown.stderr
    # A node asked to evaluate without the sandbox says no (kforge never asks; a forged request might).
    request = {"version": 1, "sandbox": False}
    node = subprocess.run([str(kforge_bin), "eval-request"], input=json.dumps(request), capture_output=True,
                          text=True, env=k.env, timeout=60)
    assert node.returncode == 0, node.stderr
    assert "bubblewrap" in json.loads(node.stdout)["refused"]


def test_model_regions_run_on_ray(ray_cluster, kforge_bin, tmp_path):
    """`kforge model --executor ray`: two regions' runs at once, their evaluations on the cluster."""
    k = kforge_with_secrets(kforge_bin, tmp_path, ray_cluster)
    plan = HERE / "scripted" / "model_cmd" / "plan.json"
    llm = f"exec:{sys.executable} {HERE / 'scripted' / 'model.py'} {plan} {tmp_path / 'calls.jsonl'}"
    proc = k.run("model", HERE / "problems" / "mini_gpt_block.py", "--target", "cpu", "--top", "2", "--threads", "1",
                 "--no-e2e-compile", "--e2e-reps", "5", "--profile-reps", "5", "--rounds", "1", "--max-fix", "0",
                 "--no-compile-baseline", "--seed", "3", "--llm", llm, "--executor", "ray", "--ray-address",
                 ray_cluster.address, "--jobs", "2", timeout=1200)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-5000:]
    assert re.search(r"2 region runs on Ray cluster \S+ \(2 nodes, 2 kforge_cpu units\), 2 at a time", proc.stderr), proc.stderr[-3000:]
    state = json.loads((tmp_path / "kforge-out" / "model-1" / "model.json").read_text())
    assert state["options"]["executor"] == "ray"
    # The regions' problems load their weights (region-K.pt beside them), which travel with each request.
    assert [k["status"] for k in state["kernels"].values()] == ["finished", "finished"], state["kernels"]
    # The GEMM with its GELU epilogue has a kernel, evaluated on a Ray node (the attention's reply has none).
    kinds = {r["name"]: r["kind"] for r in json.loads((tmp_path / "kforge-out" / "model-1" / "analysis.json").read_text())["regions"]}
    gemm = state["kernels"][next(name for name in state["kernels"] if kinds[name] == "gemm+epilogue")]
    assert gemm.get("file") and re.fullmatch(r"[^\s/]+/[0-9a-f]{8}", gemm["node"]), gemm
    # The runs evaluated nothing in their own processes.
    assert not evaluation_logs(tmp_path / "state")
