"""Summary of a bench/gpu_check.sh run: reads RUN/json/*.json and RUN/steps.tsv, writes
RUN/results.json and prints markdown tables (sweep, failures, timing fidelity, turnaround, lock)."""

import json
import statistics
import sys
from pathlib import Path

FIDELITY_TOLERANCE = 0.03  # kforge's median within 3% of Nsight Compute's for kernels >= 50 us


def load(run: Path) -> dict:
    docs = {}
    for f in sorted((run / "json").glob("*.json")):
        try:
            docs[f.stem] = json.loads(f.read_text() or "null")
        except ValueError:
            docs[f.stem] = {"error": f"unreadable: {f.read_text()[:200]}"}
    return docs


def med(doc, which):
    t = (doc or {}).get("timing", {}).get(which) or {}
    return t.get("median_ms")


def fmt(v, spec=".4g", unit=""):
    return "n/a" if v is None else f"{v:{spec}}{unit}"


def err(doc):
    e = (doc or {}).get("error") or {}
    return e.get("kind", ""), " ".join(str(e.get("message", "")).split())[:140]


def sweep(docs, out, rows):
    out.append("## Problems at GPU sizes (bench/gpu_sizes.toml)\n")
    out.append("| problem | target | status | candidate ms | eager ms | torch.compile ms | vs eager | vs compile | cand. % of SOL | eager % of SOL | bound | trials | SM MHz | error |")
    out.append("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, d in docs.items():
        if not name.startswith("sweep-") or not d:
            continue
        _, target, problem = name.split("-", 2)
        c = d.get("correctness", {})
        clocks = d.get("timing", {}).get("device_state", {}).get("sm_clock_mhz", {})
        sm = f"{clocks.get('min', '?'):.0f}-{clocks.get('max', '?'):.0f}" if clocks else "n/a"
        kind, msg = err(d)
        sol = d.get("sol") or {}
        row = {"problem": problem, "target": target, "status": d.get("status"), "candidate_ms": med(d, "candidate"),
               "eager_ms": med(d, "eager"), "compile_ms": med(d, "compile"), "speedup_vs_eager": d.get("speedup_vs_eager"),
               "speedup_vs_compile": d.get("speedup_vs_compile"), "trials": c.get("trials_passed"), "error": msg,
               "candidate_pct_of_sol": sol.get("candidate_pct_of_sol"), "eager_pct_of_sol": sol.get("eager_pct_of_sol"),
               "bound": sol.get("bound")}
        rows.append(row)
        out.append(f"| {problem} | {target} | {row['status']} | {fmt(row['candidate_ms'])} | {fmt(row['eager_ms'])} | "
                   f"{fmt(row['compile_ms'])} | {fmt(row['speedup_vs_eager'], '.2f', 'x')} | "
                   f"{fmt(row['speedup_vs_compile'], '.2f', 'x')} | {fmt(row['candidate_pct_of_sol'], '.1f', '%')} | "
                   f"{fmt(row['eager_pct_of_sol'], '.1f', '%')} | {row['bound'] or 'n/a'} | {row['trials']}/{c.get('trials')} | {sm} | {kind} {msg[:60]} |")
    ok = {(r["problem"], r["target"]) for r in rows if r["status"] == "correct"}
    both = {p for p, t in ok if (p, "cuda") in ok and (p, "triton") in ok}
    out.append(f"\nproblems with both a correct cuda and a correct triton candidate: {len(both)} (goal: >= 10)\n")


def failures(docs, out, rows):
    out.append("## GPU failures (tests/gpu_failures/, problem 01_relu), each followed by a correct candidate\n")
    out.append("| candidate | status | error kind | message | next evaluation |")
    out.append("| --- | --- | --- | --- | --- |")
    for name, d in docs.items():
        if not name.startswith("fail-"):
            continue
        what = name[5:]
        after = docs.get(f"after-{what}") or {}
        kind, msg = err(d)
        rows.append({"candidate": what, "status": (d or {}).get("status"), "kind": kind, "message": msg,
                     "next_status": after.get("status")})
        out.append(f"| {what} | {(d or {}).get('status')} | {kind} | {msg[:110]} | {after.get('status')} |")
    out.append("")


def fidelity(docs, out, rows):
    out.append("## Timing fidelity: kforge candidate median (sweep) vs Nsight Compute gpu__time_duration.sum "
               "(--clock-control none)\n")
    out.append("| candidate | kforge us | ncu us (median of 20) | kernels/call | difference | within 3% |")
    out.append("| --- | --- | --- | --- | --- | --- |")
    for name, n in docs.items():
        if not name.startswith("ncu-"):
            continue
        key = name[4:]
        d = docs.get(f"sweep-{key}") or {}
        n = n or {}
        k = med(d, "candidate")
        k_us = k * 1000 if k is not None else None
        n_us = n.get("ncu_median_us")
        diff = (k_us - n_us) / n_us if k_us is not None and n_us else None
        rows.append({"candidate": key, "kforge_us": k_us, "ncu_us": n_us, "difference": diff,
                     "kernels_per_call": n.get("kernels_per_call"), "ncu_error": n.get("error")})
        ok = "n/a" if diff is None else ("yes" if abs(diff) <= FIDELITY_TOLERANCE else "NO")
        out.append(f"| {key} | {fmt(k_us, '.1f')} | {fmt(n_us, '.1f')} | {n.get('kernels_per_call', 'n/a')} | "
                   f"{fmt(None if diff is None else 100 * diff, '+.2f', '%')} | {ok} |")
    out.append("")


def turnaround(docs, out, rows):
    out.append("## Per-candidate turnaround (build + 5 trials + timing; no torch.compile baseline)\n")
    out.append("| candidate | status | cold s | cached s (runs) | cold build s | cached build s | cache hits |")
    out.append("| --- | --- | --- | --- | --- | --- | --- |")
    groups = {}
    for name, d in docs.items():
        if name.startswith("turn-") and d:
            key, run = name[5:].rsplit("-", 1)
            groups.setdefault(key, {})[run] = d
    summary = {}
    for key, runs in groups.items():
        cold = runs.get("cold", {})
        cached = [runs[r] for r in sorted(runs) if r.startswith("cached")]
        cached_s = [c.get("wall_seconds") for c in cached if c.get("wall_seconds")]
        hits = [e.get("cache_hit") for c in cached for e in c.get("build", {}).get("events", [])]
        row = {"candidate": key, "status": cold.get("status"), "cold_s": cold.get("wall_seconds"),
               "cached_s": statistics.median(cached_s) if cached_s else None,
               "cold_build_s": cold.get("build", {}).get("load_seconds"),
               "cached_build_s": statistics.median([c.get("build", {}).get("load_seconds", 0) for c in cached]) if cached else None,
               "cached_hits": hits, "phases_cold": cold.get("phases_s")}
        rows.append(row)
        kind = "load_inline" if key.startswith("load_inline") else key.split("-")[0]
        summary.setdefault(kind, {"cold": [], "cached": []})
        if row["cold_s"]:
            summary[kind]["cold"].append(row["cold_s"])
        if row["cached_s"]:
            summary[kind]["cached"].append(row["cached_s"])
        out.append(f"| {key} | {row['status']} | {fmt(row['cold_s'], '.2f')} | {fmt(row['cached_s'], '.2f')} "
                   f"({len(cached_s)}) | {fmt(row['cold_build_s'], '.2f')} | {fmt(row['cached_build_s'], '.2f')} | "
                   f"{sum(1 for h in hits if h)}/{len(hits)} |")
    out.append("")
    for kind, s in summary.items():
        out.append(f"- {kind}: median cold {fmt(statistics.median(s['cold']) if s['cold'] else None, '.2f', ' s')}, "
                   f"median cached {fmt(statistics.median(s['cached']) if s['cached'] else None, '.2f', ' s')}")
    out.append("")
    return summary


def lock(docs, out):
    d = docs.get("lock-wait")
    if d:
        w = d.get("timing", {}).get("device_lock", {}).get("waited_seconds")
        out.append(f"## GPU lock\n\nevaluation started while another process held the lock for 30 s: status {d.get('status')}, "
                   f"waited {fmt(w, '.1f', ' s')} before timing (expected: 30 s less the time it took to reach its timing)\n")


def main() -> None:
    run = Path(sys.argv[1])
    docs = load(run)
    out = [f"# bench/gpu_check.sh results ({run.name})\n"]
    results = {"sweep": [], "failures": [], "fidelity": [], "turnaround": []}
    sweep(docs, out, results["sweep"])
    failures(docs, out, results["failures"])
    fidelity(docs, out, results["fidelity"])
    results["turnaround_summary"] = turnaround(docs, out, results["turnaround"])
    lock(docs, out)
    steps = [line.split("\t") for line in (run / "steps.tsv").read_text().splitlines() if line]
    results["steps"] = steps
    out.append("## Steps\n\n| step | result | seconds |\n| --- | --- | --- |")
    out += [f"| {s[0]} | {s[1]} | {s[2]} |" for s in steps]
    env = next((d.get("timing", {}).get("candidate_timer") for d in docs.values() if isinstance(d, dict)
                and d.get("timing", {}).get("candidate_timer", {}).get("timer") == "cuda_events"), None)
    results["device"] = env
    if env:
        out.append(f"\ndevice: {env.get('device_name')}, driver {env.get('driver')}, max SM clock "
                   f"{env.get('max_sm_clock_mhz')} MHz, L2 flush {env.get('l2_flush_bytes', 0) / 2**20:.0f} MiB")
    (run / "results.json").write_text(json.dumps(results, indent=1, default=str))
    print("\n".join(out))


if __name__ == "__main__":
    main()
