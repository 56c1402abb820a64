"""report.json and report.md of `kforge model`: where the time went, what each region's kernel
gained alone and inside the model, and the whole model's latency for every variant."""

from typing import Dict, List

from kforge_worker.model import analysis


def _why_not(region: dict, kernel: dict, decision: dict) -> str:
    if region.get("skipped"):
        return f"not a problem: {region['skipped']}"
    if not kernel:
        return "not among the regions sent to the loop (--top)"
    if not kernel.get("file"):
        return kernel.get("error") or kernel.get("reason") or f"no correct kernel from run {kernel.get('run')} ({kernel.get('status')})"
    return decision.get("why") or "not measured"


def build(data: dict, kernels: Dict[str, dict], decisions: Dict[str, dict], final: List[str], runs: dict,
          patch: str) -> dict:
    final_run = runs.get("final") or {}
    variants = final_run.get("variants", {}) if "failed" not in final_run else {}
    rows = []
    for r in data["regions"]:
        k = kernels.get(r["name"], {})
        d = decisions.get(r["name"], {})
        rows.append({"name": r["name"], "kind": r["kind"], "instances": r["instances"], "calls": r["calls"],
                     "share": r["share"], "problem": r.get("problem"), "skipped": r.get("skipped"),
                     "run": k.get("run"), "kernel_speedup": k.get("speedup"), "kernel_status": k.get("status"),
                     "installed": r["name"] in final, "end_to_end_speedup_alone": d.get("end_to_end_speedup_alone"),
                     "why_not_installed": None if r["name"] in final else _why_not(r, k, d)})
    kept = [row for row in rows if row["installed"]]
    predicted = analysis.amdahl([row["share"] for row in kept], [row["kernel_speedup"] or 1.0 for row in kept]) if kept else 1.0
    measured = variants.get("kforge", {}).get("speedup_vs_eager")
    return {"schema": 1, "model": data["model"], "device": data["device"], "capture": data["capture"],
            "eager_ms_profiled": data["eager_ms"], "remainder_share": data["remainder_share"],
            "amdahl_bound": data["amdahl_bound"], "regions": rows, "installed": final, "patch": patch,
            "predicted_speedup": predicted, "measured_speedup": measured,
            "variants": {n: {k: x for k, x in v.items() if not k.endswith("samples_ms")} for n, v in variants.items()},
            "decode": data.get("decode"),
            "verdict": (final_run.get("verdicts") or {}).get("kforge"),
            "compiled_verdict": (final_run.get("verdicts") or {}).get("kforge+torch.compile"),
            "variant_errors": {n: e.splitlines()[0] for n, e in (final_run.get("errors") or {}).items()},
            "measure_failed": final_run.get("failed") or (runs.get("all") or {}).get("failed")}


def _x(v) -> str:
    return "—" if v is None else f"{v:.2f}x"


def _interval(v: dict, fmt: str) -> str:
    return f"{v['median']:{fmt}} [{v['low']:{fmt}}, {v['high']:{fmt}}]"


def _speedup(s) -> str:
    return f"{s['median']:.2f}x [{s['low']:.2f}, {s['high']:.2f}]" if s else "1.00x"


def _verdict_text(v: dict, what: str) -> str:
    """A correct verdict's numbers (verdict.check()) in words."""
    text = (f"{what} within the tolerance of the original's (max abs error {v['max_abs_error']:.2g})" if "max_abs_error" in v
            else f"{what} outside the original's tolerance, as any kernel's that rounds differently in this precision")
    a = v.get("audit")
    if a:
        text += (f", error {a['candidate_error']:.2g} against the model in higher precision, within the audit's limit "
                 f"{a['limit']:.2g} (the original's own {a['reference_error']:.2g})")
    return text


def _decoder_table(variants: dict, decode: dict) -> List[str]:
    """A decoder's end to end: the prefill (one forward over the prompt) and the decode (single-token
    steps with the KV cache), each as latency, tokens per second and speedup over eager."""
    lines = [f"Prefill: one forward over {decode['batch']} x {decode['prompt']} prompt tokens; decode: "
             f"{decode['steps']} single-token steps with the KV cache for each of {decode['batch']} sequences. "
             "Medians [95% intervals].", "",
             "| Variant | Prefill ms | Prefill tokens/s | Prefill speedup | Decode ms | Decode tokens/s | Decode speedup |",
             "|---|---|---|---|---|---|---|"]
    for name, v in variants.items():
        lines.append(f"| {name} | {_interval(v['ms'], '.3f')} | {_interval(v['prefill_tokens_per_s'], '.0f')} | "
                     f"{_speedup(v.get('speedup_vs_eager'))} | {_interval(v['decode_ms'], '.3f')} | "
                     f"{_interval(v['decode_tokens_per_s'], '.0f')} | {_speedup(v.get('decode_speedup_vs_eager'))} |")
    return lines


def markdown(rep: dict) -> str:
    lines = [f"# kforge model: {rep['model'].rsplit('/', 1)[-1]} on {rep['device']}", ""]
    cap = rep["capture"]
    lines.append(f"Graph: {cap['method']}" + (f" — {cap['fallback_reason']}; regions are modules found while it ran eagerly"
                                               if cap["fallback_reason"] else "") + ".")
    bound = rep["amdahl_bound"]
    lines.append(f"Eager forward when profiled: {rep['eager_ms_profiled']:.3f} ms; outside every region: "
                 f"{rep['remainder_share']:.1%}; Amdahl bound over all regions: "
                 f"{'unbounded' if bound is None else f'{bound:.2f}x'}.")
    lines += ["", "| Region | Kind | Modules | Calls | Share | Kernel speedup | End to end alone | Installed |",
              "|---|---|---|---|---|---|---|---|"]
    for r in rep["regions"]:
        modules = "; ".join(" -> ".join(p or "the model itself" for p in i) for i in r["instances"])
        installed = "yes" if r["installed"] else f"no ({r['why_not_installed']})"
        lines.append(f"| {r['name']} | {r['kind']} | {modules} | {r['calls']} | {r['share']:.1%} | "
                     f"{_x(r['kernel_speedup'])} | {_x(r['end_to_end_speedup_alone'])} | {installed} |")
    lines += ["", "## End to end", ""]
    if not rep["installed"]:
        lines.append("No region's kernel was installed" + (f": {rep['measure_failed']}" if rep.get("measure_failed") else "")
                     + "; the model stays as it was.\n")
    decode = rep.get("decode")
    if rep["variants"] and decode:
        lines += _decoder_table(rep["variants"], decode)
    elif rep["variants"]:
        lines += ["| Variant | Latency (ms, median [95% interval]) | Speedup vs eager |", "|---|---|---|"]
        for name, v in rep["variants"].items():
            lines.append(f"| {name} | {_interval(v['ms'], '.3f')} | {_speedup(v.get('speedup_vs_eager'))} |")
    if rep["variants"]:
        verdict = rep.get("verdict") or {}
        if verdict.get("correct"):
            lines.append("\nThe patched model on fresh inputs: " + "; ".join(
                _verdict_text(v, what) for v, what in [(verdict, "outputs"), (verdict.get("decode"), "decode steps' logits")] if v) + ".")
        compiled = rep.get("compiled_verdict")
        if compiled is not None:
            lines.append("kforge+torch.compile (the kernels as torch.library custom ops, compiled with the rest): "
                         + ("matches the original." if compiled.get("correct") else f"wrong: {compiled.get('reason')}"))
    for name, error in (rep.get("variant_errors") or {}).items():
        lines.append(f"\n{name} did not run: {error}")
    m = rep["measured_speedup"]
    lines += ["", f"Predicted end-to-end speedup (Amdahl, the installed regions' kernel speedups): "
              f"{rep['predicted_speedup']:.2f}x; measured: {_x(m['median'] if m else None)}.",
              f"Patch: `{rep['patch']}` (`import patch; patch.apply(model)`)."]
    return "\n".join(lines) + "\n"


def _esc(text) -> str:
    return str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def amdahl_svg(rep: dict, width: int = 640) -> str:
    """One bar of the forward's time split by region (installed regions filled), and below it the
    bound: what remains if every region took no time."""
    colours = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7"]
    x, parts = 0.0, []
    for i, r in enumerate(rep["regions"]):
        w = r["share"] * width
        fill = colours[i % len(colours)]
        opacity = "1" if r["installed"] else "0.35"
        parts.append(f'<rect x="{x:.1f}" y="20" width="{w:.1f}" height="28" fill="{fill}" fill-opacity="{opacity}">'
                     f'<title>{_esc(r["name"])} {_esc(r["kind"])}: {r["share"]:.1%}</title></rect>')
        if w > 40:
            parts.append(f'<text x="{x + 3:.1f}" y="38" font-size="11">{_esc(r["name"])}</text>')
        x += w
    parts.append(f'<rect x="{x:.1f}" y="20" width="{max(0.0, width - x):.1f}" height="28" fill="#bab0ac">'
                 f'<title>outside every region: {rep["remainder_share"]:.1%}</title></rect>')
    bound = rep["amdahl_bound"]
    label = "unbounded" if bound is None else f"{bound:.2f}x"
    parts.append(f'<text x="0" y="14" font-size="12">Share of the eager forward (faded: left to PyTorch); '
                 f'Amdahl bound {label}, predicted {rep["predicted_speedup"]:.2f}x</text>')
    return f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="56">{"".join(parts)}</svg>'


def html(rep: dict) -> str:
    """report.md's content as one self-contained page, with the Amdahl chart."""
    body = []
    for line in markdown(rep).splitlines():
        if line.startswith("# "):
            body.append(f"<h1>{_esc(line[2:])}</h1>")
        elif line.startswith("## "):
            body.append(f"<h2>{_esc(line[3:])}</h2>")
        elif line.startswith("|---"):
            continue
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            tag = "th" if not body or not body[-1].startswith("<tr") else "td"
            body.append("<tr>" + "".join(f"<{tag}>{_esc(c)}</{tag}>" for c in cells) + "</tr>")
        elif line.strip():
            body.append(f"<p>{_esc(line)}</p>")
    out, in_table = [], False
    for item in body:
        if item.startswith("<tr") and not in_table:
            out.append("<table>")
            in_table = True
        elif not item.startswith("<tr") and in_table:
            out.append("</table>")
            in_table = False
        out.append(item)
    if in_table:
        out.append("</table>")
    out.insert(1, amdahl_svg(rep))
    style = "body{font-family:sans-serif;max-width:60em;margin:2em auto}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px}"
    return f"<!doctype html><html><head><meta charset='utf-8'><title>kforge model</title><style>{style}</style></head><body>{''.join(out)}</body></html>\n"
