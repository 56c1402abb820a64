"""summary.md of bench/wgpu_gpu_check.sh: the adapter the wgpu helper picked, and per bundled wgpu
candidate its status, speedup against PyTorch eager (on the host CPU: the target's device) and the
adapter its build recorded.

    python bench/wgpu_report.py RESULTS_DIR [--expect NVIDIA]
"""

import argparse
import glob
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fmt_ms(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def speedup(row) -> str:
    point, (low, high) = row.get("speedup_vs_eager"), row.get("ci") or [None, None]
    if point is None:
        return "-"
    return f"{point:.2f}x" + (f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("--expect", default="NVIDIA")
    args = parser.parse_args()
    lines = ["# wgpu target: the bundled candidates (bench/wgpu_gpu_check.sh)", ""]
    helper = os.path.join(args.results, "adapters.json")
    if os.path.exists(helper):
        doc = json.load(open(helper))
        seen = ", ".join(f"{a.get('device')} ({a.get('backend_type')}, {a.get('adapter_type')})" for a in doc["adapters"])
        lines += [f"- wgpu {doc['wgpu']}; adapters seen: {seen or 'none'}",
                  f"- kforge_kernels.wgsl picks **{doc['picked_name']}** "
                  f"({'as expected' if doc['ok'] else 'NOT the expected'} '{doc['expect']}'); "
                  f"driver {doc['picked'].get('description')!r}",
                  f"- VK_DRIVER_FILES={doc['env'].get('VK_DRIVER_FILES')}, "
                  f"WGPU_BACKEND_TYPE={doc['env'].get('WGPU_BACKEND_TYPE')}"]
    jsonl = os.path.join(args.results, "wgpu.jsonl")
    rows = [json.loads(line) for line in open(jsonl)] if os.path.exists(jsonl) else []
    if not rows:
        lines.append(f"\nNo evaluations ({jsonl} missing or empty).")
    else:
        correct = sum(r["status"] == "correct" for r in rows)
        bundled = sorted(os.path.basename(f)[:-3] for f in glob.glob(os.path.join(REPO, "examples/candidates/wgpu/*.py")))
        missing = sorted(set(bundled) - {r["problem"] for r in rows})
        off = [r["problem"] for r in rows if not r["adapter"] or any(args.expect.lower() not in a.lower() for a in r["adapter"])]
        isolation = sorted({str(r.get("isolation")) for r in rows})
        lines += [f"- {correct} of {len(rows)} candidates correct; isolation: {', '.join(isolation)}",
                  f"- not evaluated (of {len(bundled)} bundled): {', '.join(missing) or 'none'}",
                  "- the candidate's RLIMIT_AS ([sandbox] address_space_gb; 0: none): "
                  + ", ".join(sorted({f"{r.get('address_space_gb', 0):g} GiB" for r in rows})),
                  f"- adapter not named like '{args.expect}' (or none recorded): {', '.join(off) or 'none'}",
                  "- speedup: median of per-round ratios against PyTorch eager on the host CPU (the wgpu target's "
                  "device is `cpu`; every launch copies tensors to the adapter and back), [95% interval]",
                  "",
                  "| problem | status | speedup vs eager | candidate ms | eager ms | adapter | eval s |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            status = r["status"] or f"none (exit {r['exit']})"
            if r["status"] not in ("correct", None) and r.get("error"):
                status += ": " + r["error"].replace("|", "/").replace("\n", " ")[:120]
            lines.append(f"| {r['problem']} | {status} | {speedup(r)} | {fmt_ms(r.get('candidate_ms'))} | "
                         f"{fmt_ms(r.get('eager_ms'))} | {'; '.join(r['adapter']) or '-'} | {r['command_ms'] / 1000:.1f} |")
    with open(os.path.join(args.results, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
