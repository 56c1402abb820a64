"""Markdown summary of a bench/profile_gpu.sh run: python bench/profile_report.py RUN_DIR [PEAKS_DIR].

Per problem and side: kforge's median, % of speed of light, Nsight Compute's kernel time and each
unit's throughput as % of peak (raw, as ncu reports it), occupancy, the bound and the limiters;
then the checks that the figures make physical sense, and the peaks kforge measured next to the
device's datasheet."""

import glob
import json
import os
import sys

# Datasheet figures (dense, no sparsity), by a substring of the device name: bytes/s and FLOP/s.
# FP32 is the non-tensor-core rate: kforge's strict precision keeps TF32 off.
DATASHEETS = {
    "H100 80GB HBM3": {"source": "NVIDIA H100 SXM5 datasheet", "bandwidth": 3.35e12, "float32": 67e12,
                       "float16": 989e12, "bfloat16": 989e12, "float64": 67e12},
    "H100 PCIe": {"source": "NVIDIA H100 PCIe datasheet", "bandwidth": 2.0e12, "float32": 51e12,
                  "float16": 756e12, "bfloat16": 756e12, "float64": 51e12},
    "H200": {"source": "NVIDIA H200 SXM datasheet", "bandwidth": 4.8e12, "float32": 67e12,
             "float16": 989e12, "bfloat16": 989e12, "float64": 67e12},
}
ELEMENTWISE = {"01_relu", "04_gelu", "12_swish"}


def fmt(v, spec=".1f", unit=""):
    return "-" if v is None else f"{v:{spec}}{unit}"


def main_kernel(side):
    kernels = side.get("ncu", {}).get("kernels", [])
    return kernels[0] if kernels else {}


def rows(docs):
    out = ["| problem | side | kforge median | % SOL (model) | ncu kernels/call | ncu time/call | main kernel | DRAM % | "
           "L2 % | L1 % | SM % | occupancy % (limit) | bound | limiter 1 |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, doc in docs:
        for label, side in doc.get("sides", {}).items():
            k = main_kernel(side)
            kernels = side.get("ncu", {}).get("kernels", [])
            an = side.get("analysis", {})
            limiters = an.get("limiters", [])
            out.append("| {} | {} | {} | {} | {} | {} | `{}` | {} | {} | {} | {} | {} ({}) | {} | {} |".format(
                name, label, fmt(side.get("timing", {}).get("median_ms"), ".4g", " ms"),
                fmt(side.get("achieved", {}).get("pct_of_sol"), ".1f", "%"),
                sum(x.get("launches_per_call", 0) for x in kernels) if kernels else "-",
                fmt(sum(x.get("duration_us_per_call", 0) for x in kernels) if kernels else None, ".4g", " µs"),
                k.get("short_name", "-"), fmt(k.get("dram_pct")), fmt(k.get("l2_pct")), fmt(k.get("l1_pct")),
                fmt(k.get("sm_pct")), fmt(k.get("achieved_occupancy_pct"), ".0f"), k.get("occupancy_limiter", "-"),
                an.get("bound", "-"), (limiters[0]["text"] if limiters else "-").replace("|", "/")))
    return out


def sanity(docs):
    out = []
    for name, doc in docs:
        sol = doc.get("sol", {})
        for label, side in doc.get("sides", {}).items():
            for k in side.get("ncu", {}).get("kernels", []):
                over = {key: k[key] for key in ("dram_pct", "l2_pct", "l1_pct", "sm_pct", "achieved_occupancy_pct")
                        if isinstance(k.get(key), (int, float)) and k[key] > 100}
                if over:
                    out.append(f"- ABOVE 100%: {name} {label} `{k.get('short_name')}`: {over}")
            kernels = side.get("ncu", {}).get("kernels", [])
            if name.split("-", 1)[-1] in ELEMENTWISE and kernels and sol.get("bytes") and sol.get("bandwidth_bytes_per_s"):
                us = sum(x.get("duration_us_per_call", 0) for x in kernels)
                bw = sol["bytes"] / (us / 1e6)
                out.append(f"- {name} {label}: {sol['bytes'] / 1e6:.0f} MB in {us:.1f} µs of kernel time (ncu) = "
                           f"{bw / 1e9:.0f} GB/s, {100 * bw / sol['bandwidth_bytes_per_s']:.0f}% of the "
                           f"{sol['bandwidth_bytes_per_s'] / 1e9:.0f} GB/s kforge measured (best of copy, read and write streams); ncu's DRAM "
                           f"throughput {fmt(main_kernel(side).get('dram_pct'))}%")
    return out or ["- no ncu figures"]


def peaks_table(peaks_dir):
    out = ["| device | figure | kforge measured | datasheet | measured / datasheet |", "|---|---|---|---|---|"]
    sources = set()
    for path in sorted(glob.glob(os.path.join(peaks_dir, "*.json"))):
        peaks = json.load(open(path))
        key = peaks.get("key", {})
        if key.get("device") != "cuda":
            continue
        device = key.get("model", "?")
        sheet = next((v for name, v in DATASHEETS.items() if name in device), None)
        sources.add(sheet["source"] if sheet else f"none on file for {device}")
        bw = max(level["bytes_per_s"] for level in peaks["bandwidth"])
        figures = [("DRAM bandwidth (best of 1 GiB copy, read, write)", bw, sheet and sheet["bandwidth"], 1e9, "GB/s")]
        for dtype, flops in sorted(peaks["flops"].items()):
            figures.append((f"{dtype} matmul", flops, sheet and sheet.get(dtype), 1e12, "TFLOP/s"))
        for label, measured, datasheet, scale, unit in figures:
            out.append(f"| {device} | {label} | {measured / scale:.4g} {unit} | "
                       f"{fmt(datasheet / scale if datasheet else None, '.4g', ' ' + unit)} | "
                       f"{fmt(100 * measured / datasheet if datasheet else None, '.0f', '%')} |")
    out.append("")
    out.append(f"Datasheet: {'; '.join(sorted(sources)) or 'no GPU peaks measured'}. The fp32 row is the CUDA-core "
               "rate (kforge's strict precision keeps TF32 off); fp16/bf16 are dense tensor-core rates.")
    return out


def main():
    run = sys.argv[1]
    peaks_dir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(run, "cache", "peaks")
    docs = []
    for path in sorted(glob.glob(os.path.join(run, "json", "*.json"))):
        try:
            docs.append((os.path.basename(path)[:-5], json.load(open(path))))
        except ValueError as exc:
            print(f"{path}: {exc}", file=sys.stderr)
    device = next((d.get("device_name", "") for _, d in docs if d.get("device_name")), "unknown device")
    lines = [f"# kforge profile on {device}", ""]
    errors = [f"- {n}: {d['error']}" for n, d in docs if "error" in d]
    notes = sorted({f"- {n}: {note}" for n, d in docs for note in d.get("notes", [])})
    lines += rows([(n, d) for n, d in docs if "error" not in d]) + [""]
    lines += ["## Do the figures make physical sense?", ""] + sanity(docs) + [""]
    lines += ["## Peaks: measured by kforge vs datasheet", ""] + peaks_table(peaks_dir) + [""]
    if errors:
        lines += ["## Failed profiles", ""] + errors + [""]
    if notes:
        lines += ["## Notes", ""] + notes + [""]
    lines += ["## Agent text (first profile)", "", "```"] + (docs[0][1].get("summary", "").splitlines() if docs else []) + ["```"]
    print("\n".join(lines))


if __name__ == "__main__":
    main()
