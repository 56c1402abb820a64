"""Which wgpu adapter the wgpu target's helper (kforge_kernels.wgsl) runs on, and whether it is the one
expected (bench/wgpu_gpu_check.sh: NVIDIA's GPU, not Mesa's lavapipe on the CPU).

    python bench/wgpu_adapter.py helper --expect NVIDIA --json adapters.json [--launch]
        every adapter wgpu sees and the helper's pick, in this process (PYTHONPATH must reach worker/);
        --launch also runs a small shader on it and checks what it wrote
    python bench/wgpu_adapter.py evals --expect NVIDIA RESULT.json...
        the adapter recorded with the builds of `kforge eval --json` results (inside kforge's sandbox)

--expect: a case-insensitive part of the adapter's name (default NVIDIA), --backend its back end
(default Vulkan); exit 1 when an adapter does not match, with what it is instead.
"""

import argparse
import json
import os
import sys

VULKAN_ENV = ("VK_DRIVER_FILES", "VK_ICD_FILENAMES", "WGPU_BACKEND_TYPE", "WGPUPY_WGPU_ADAPTER_NAME")


def verdict(adapter: str, expect: str, backend: str) -> str:
    """"" when ``adapter`` (a name as recorded: "NAME (BACKEND, TYPE)") matches ``expect`` on ``backend``,
    else why not."""
    if expect.lower() in adapter.lower():
        return "" if f"({backend.lower()}," in adapter.lower() else f"'{adapter}' is not on the {backend} back end"
    cpu = any(word in adapter.lower() for word in ("llvmpipe", "lavapipe", "softpipe", "swiftshader", ", cpu)"))
    what = "a CPU adapter (Mesa's lavapipe/llvmpipe or another software driver)" if cpu else "another adapter"
    return (f"the wgpu helper runs on '{adapter}', {what}, not one named like '{expect}' "
            "(WGPU_EXPECT_ADAPTER names the expected one)")


def helper(args) -> int:
    import wgpu

    from kforge_kernels import wgsl

    adapters = [dict(a.info) for a in wgpu.gpu.enumerate_adapters_sync()]
    for a in adapters:
        print(f"adapter seen: {a.get('device')} ({a.get('backend_type')}, {a.get('adapter_type')}) "
              f"vendor={a.get('vendor')!r} driver={a.get('description')!r}")
    picked, name = wgsl.adapter_info(), wgsl.adapter_name()
    print(f"kforge_kernels.wgsl picks: {name}")
    problem = verdict(name, args.expect, args.backend)
    launch = launch_check(wgsl) if args.launch else None
    if args.launch:
        print(f"launch: {launch or 'ok'}")
    if launch:
        problem = problem or f"a shader launch on '{name}' failed: {launch}"
    doc = {"wgpu": wgpu.__version__, "adapters": adapters, "picked": picked, "picked_name": name,
           "expect": args.expect, "ok": not problem, "launch": None if not args.launch else (launch or "ok"),
           "env": {k: os.environ.get(k) for k in VULKAN_ENV}}
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1, default=str)
    if problem:
        print(f"FAIL: {problem}", file=sys.stderr)
        return 1
    return 0


def launch_check(wgsl) -> str:
    """"" when a small shader computes 2 * x + 1 on the adapter, else what went wrong."""
    import torch

    src = """
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;
override n: u32;
@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < n) { y[gid.x] = 2.0 * x[gid.x] + 1.0; }
}
"""
    try:
        x = torch.arange(1000, dtype=torch.float32)
        y = torch.zeros_like(x)
        wgsl.build(src).launch((16,), x, y, n=1000)
    except Exception as e:  # the driver's own error, whatever its type
        return f"{type(e).__name__}: {e}"
    return "" if torch.equal(y, 2 * x + 1) else f"wrong values (first: {y[:4].tolist()})"


def evals(args) -> int:
    failed, seen = 0, 0
    for path in args.results:
        with open(path) as f:
            doc = json.load(f)
        names = sorted({e.get("adapter", "") for e in (doc.get("build") or {}).get("events", []) if e.get("path") == "wgsl"})
        if not names:
            print(f"{path}: no wgsl build recorded (status {doc.get('status')})")
            continue
        seen += 1
        for name in names:
            problem = verdict(name, args.expect, args.backend)
            print(f"{path}: {name}" + (f"  FAIL: {problem}" if problem else ""))
            failed += bool(problem)
    if not seen:
        print("FAIL: no result recorded a wgsl build, so none says which adapter it ran on", file=sys.stderr)
    return 1 if failed or not seen else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("helper", help="the helper's adapter in this process")
    p.add_argument("--json", help="write the adapters seen and the pick here")
    p.add_argument("--launch", action="store_true", help="also run a small shader on the adapter")
    p.add_argument("--expect", default="NVIDIA")
    p.add_argument("--backend", default="Vulkan")
    p = sub.add_parser("evals", help="the adapters recorded in kforge eval results")
    p.add_argument("results", nargs="+")
    p.add_argument("--expect", default="NVIDIA")
    p.add_argument("--backend", default="Vulkan")
    args = parser.parse_args()
    return helper(args) if args.command == "helper" else evals(args)


if __name__ == "__main__":
    sys.exit(main())
