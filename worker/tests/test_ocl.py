"""The opencl target's helper: build, launch on tensors, persistent cache, errors, concurrent builds."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from kforge_kernels import buildinfo, ocl
from kforge_kernels.errors import CompileError

WORKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SRC = """
__kernel void axpy(__global const float* x, __global float* y, float a, int n) {
    int i = get_global_id(0);
    if (i < n) y[i] += a * x[i];
}
__kernel void row_sum(__global const float* x, __global float* out, int cols, __local float* tmp) {
    int r = get_group_id(0), l = get_local_id(0), ls = get_local_size(0);
    float s = 0.0f;
    for (int c = l; c < cols; c += ls) s += x[r * cols + c];
    tmp[l] = s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int w = ls / 2; w > 0; w /= 2) {
        if (l < w) tmp[l] += tmp[l + w];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[r] = tmp[0];
}
"""

CHILD = textwrap.dedent('''
    import sys, torch
    from kforge_kernels import buildinfo, ocl
    prog = ocl.build(open(sys.argv[1]).read())
    x = torch.arange(1000, dtype=torch.float32); y = torch.ones(1000)
    prog.launch("axpy", (1000,), None, x, y, 2.0, 1000)
    assert torch.equal(y, 1 + 2 * x)
    print("HIT" if buildinfo.events()[-1]["cache_hit"] else "MISS")
''')


def run_child(tmp_path, cache):
    src = tmp_path / "src.cl"
    src.write_text(SRC)
    env = dict(os.environ, PYTHONPATH=WORKER_DIR, KFORGE_BUILD_CACHE=str(cache))
    env.pop("POCL_CACHE_DIR", None)
    return subprocess.Popen([sys.executable, "-c", CHILD, str(src)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(p):
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    return out.strip()


def test_build_and_launch():
    prog = ocl.build(SRC)
    x = torch.randn(5000)
    y = torch.randn(5000)
    want = y + 0.25 * x
    prog.launch("axpy", (5000,), None, x, y, 0.25, 5000)
    assert torch.allclose(y, want)
    assert buildinfo.events()[-1]["path"] == "opencl"


def test_local_memory_and_views():
    prog = ocl.build(SRC)
    x = torch.randn(64, 300)
    out = torch.empty(64)
    prog.launch("row_sum", (64 * 32,), (32,), x, out, 300, ocl.LocalMemory(32 * 4))
    assert torch.allclose(out, x.sum(1), atol=1e-4, rtol=1e-4)
    # A contiguous view at an offset writes into the base tensor.
    base = torch.zeros(10)
    prog.launch("axpy", (4,), None, torch.ones(4), base[3:7], 1.0, 4)
    assert base.tolist() == [0, 0, 0, 1, 1, 1, 1, 0, 0, 0]


def test_argument_errors():
    prog = ocl.build(SRC)
    with pytest.raises(TypeError, match="dtype"):
        prog.launch("axpy", (4,), None, torch.ones(4, dtype=torch.float64), torch.ones(4), 1.0, 4)
    with pytest.raises(ValueError, match="contiguous"):
        prog.launch("axpy", (4,), None, torch.ones(4, 2)[:, 0], torch.ones(4), 1.0, 4)
    with pytest.raises(TypeError, match="arguments"):
        prog.launch("axpy", (4,), None, torch.ones(4))
    with pytest.raises(KeyError):
        prog.launch("nope", (4,), None)


def test_compile_error_has_line():
    with pytest.raises(CompileError) as ei:
        ocl.build("__kernel void f(__global float* x) {\n    x[0] = undefined_name;\n}\n")
    assert ":2:" in ei.value.log and "undefined_name" in ei.value.log


def test_fast_math_rejected():
    with pytest.raises(CompileError, match="not allowed"):
        ocl.build(SRC, ["-cl-fast-relaxed-math"])


def test_cache_in_new_process_and_location(tmp_path):
    cache = tmp_path / "cache"
    assert finish(run_child(tmp_path, cache)) == "MISS"
    assert finish(run_child(tmp_path, cache)) == "HIT"
    assert any((cache / "pocl").iterdir()), "PoCL's kernel cache is not under KFORGE_BUILD_CACHE"


def test_concurrent_builds_of_one_key(tmp_path):
    cache = tmp_path / "cache"
    procs = [run_child(tmp_path, cache) for _ in range(2)]
    results = [finish(p) for p in procs]
    assert all(r in ("HIT", "MISS") for r in results)
