"""Before/after turnaround of one problem, evaluations interleaved (ABBA order) so that both trees see
the same load. Each round: a cold evaluation (fresh cache, the device's peaks copied in from
$OUT/peaks when present) and a cached one, per tree. Wall and CPU seconds (kforge and its workers).

    OUT=/tmp/x python bench/turnaround_interleaved.py PROBLEM ROUNDS BEFORE_TREE AFTER_TREE PYTHON
"""
import json, os, resource, shutil, subprocess, sys, time, statistics
trees = {"before": sys.argv[3], "after": sys.argv[4]}  # two checkouts, each with build/kforge
py = sys.argv[5]  # the worker interpreter, by its real path
rows = []
OUT = os.environ.get("OUT", "/tmp/kforge-interleaved")
os.makedirs(OUT, exist_ok=True)
def run(tree, state, cache, i):
    root = trees[tree]
    env = dict(os.environ, KFORGE_HOME=root, KFORGE_STATE_DIR=f"{OUT}/state-{tree}", KFORGE_CACHE_DIR=cache)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([f"{root}/build/kforge", "-q", "eval", f"{root}/examples/problems/{P}.py",
                    f"{root}/examples/candidates/cpu/{P}.py", "--target", "cpu", "--no-compile-baseline",
                    "--python", py, "--json", f"{OUT}/{tree}-{state}-{i}.json"], env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    status = json.load(open(f"{OUT}/{tree}-{state}-{i}.json"))["status"]
    rows.append((tree, state, i, wall, cpu, status, os.getloadavg()[0]))
    print(*rows[-1], sep="\t", flush=True)
P = sys.argv[1]
n = int(sys.argv[2])
for i in range(n):
    for tree in (("before", "after") if i % 2 == 0 else ("after", "before")):
        cache = f"{OUT}/cache-{tree}-{i}"
        shutil.rmtree(cache, ignore_errors=True)
        os.makedirs(cache)
        if os.path.isdir(f"{OUT}/peaks"): shutil.copytree(f"{OUT}/peaks", cache + "/peaks")
        run(tree, "cold", cache, i)
        run(tree, "cached", cache, i)
for tree in trees:
    for state in ("cold", "cached"):
        w = [r[3] for r in rows if r[0] == tree and r[1] == state]
        c = [r[4] for r in rows if r[0] == tree and r[1] == state]
        print(f"{tree} {state}: median wall {statistics.median(w):.2f} s (min {min(w):.2f}, max {max(w):.2f}), "
              f"median CPU {statistics.median(c):.2f} s (min {min(c):.2f}, max {max(c):.2f}), n={len(w)}")
