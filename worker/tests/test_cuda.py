"""The cuda target's fast path (kforge_kernels.cuda), its cache, the load_inline cache key, GPU
error names and the Triton interpreter fix. Builds need no GPU (NVRTC, nvcc); launches do, and
those tests are skipped with the reason when no GPU is present."""

import ctypes
import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest
import torch

from kforge_kernels import buildinfo, cuda, inline_cache
from kforge_worker.common import gpu_errors

HAS_GPU = torch.cuda.is_available()
needs_gpu = pytest.mark.skipif(not HAS_GPU, reason="no CUDA GPU (torch.cuda.is_available() is False)")

SRC = r"""
extern "C" __global__ void __launch_bounds__(256) scale(const float* __restrict__ x, float* y, long long n, float s) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] * s;
}
template <int N> __global__ void fill(float* y) { y[threadIdx.x] = N; }
extern "C" {
__global__ void big_smem(float* y) {
    extern __shared__ float buf[];
    buf[threadIdx.x] = threadIdx.x;
    __syncthreads();
    y[threadIdx.x] = buf[blockDim.x - 1 - threadIdx.x];
}
}
"""


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KFORGE_BUILD_CACHE", str(tmp_path / "build"))
    monkeypatch.delenv("KFORGE_COMPILE_ONLY", raising=False)
    monkeypatch.delenv("KFORGE_CUDA_ARCH", raising=False)
    cuda._modules.clear()


def test_arch_spellings(monkeypatch):
    assert cuda.arch() == "sm_90a"
    for text, want in [("sm_80", "sm_80"), ("90a", "sm_90a"), ("8.9", "sm_89"), ("compute_90", "sm_90"),
                       ("sm_100a", "sm_100a")]:
        assert cuda.normalize_arch(text) == want
    assert cuda.torch_arch_list("sm_90a") == "9.0a"
    monkeypatch.setenv("KFORGE_CUDA_ARCH", "sm_80")
    assert cuda.arch() == "sm_80"
    with pytest.raises(ValueError, match="KFORGE_CUDA_ARCH"):
        cuda.normalize_arch("hopper")


def test_signatures_are_read_from_the_source():
    sigs = cuda.parse_signatures(SRC)
    assert set(sigs) == {"scale", "big_smem"}  # templates are not extern "C"
    x, y, n, s = sigs["scale"]
    assert x.pointer and x.pointee == "float" and y.pointer
    assert n.ctype is ctypes.c_int64 and s.ctype is ctypes.c_float


def test_nvrtc_build_is_cached_across_processes():
    m = cuda.compile(SRC, name_expressions=["fill<3>"])
    assert m.arch == "sm_90a" and m.cubin[:4] == b"\x7fELF"
    assert m._lowered["fill<3>"].startswith("_Z")
    cuda._modules.clear()  # as a new process would: only the disk cache is left
    again = cuda.compile(SRC, name_expressions=["fill<3>"])
    assert again.key == m.key and again.cubin == m.cubin
    events = [e for e in buildinfo.events() if e["key"] == m.key]
    assert [e["cache_hit"] for e in events][-2:] == [False, True]


def test_key_covers_source_options_and_arch():
    base = cuda.compile(SRC).key
    assert cuda.compile(SRC + "\n// changed").key != base
    assert cuda.compile(SRC, options=["-DTILE=64"]).key != base
    assert cuda.compile(SRC, arch_override="sm_80").key != base
    assert cuda.compile(SRC).key == base


def test_compile_error_carries_the_log():
    with pytest.raises(cuda.CompileError) as err:
        cuda.compile('extern "C" __global__ void k(float* y) { y[0] = undefined_name; }')
    assert "undefined_name" in str(err.value)
    assert 'kernel.cu(1): error: identifier "undefined_name" is undefined' in err.value.log


def _build_in_child(args):
    cache, src = args
    os.environ["KFORGE_BUILD_CACHE"] = cache
    return cuda.compile(src).key


def test_concurrent_builds_of_one_key_do_not_collide(tmp_path):
    src = SRC + "\n// concurrent"
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        keys = pool.map(_build_in_child, [(str(tmp_path / "shared"), src)] * 4)
    assert len(set(keys)) == 1
    files = sorted(os.listdir(tmp_path / "shared" / "cuda"))
    assert f"{keys[0]}.cubin" in files and f"{keys[0]}.json" in files
    assert not [f for f in files if f.startswith(".")], files  # no temp files left behind


@pytest.mark.skipif(not os.path.exists(os.path.join(cuda._cuda_home(), "bin", "nvcc")), reason="nvcc not installed")
def test_nvcc_backend_builds_a_cubin():
    m = cuda.compile(SRC, backend="nvcc")
    assert m.cubin[:4] == b"\x7fELF" and m.arch == "sm_90a"
    assert m.key != cuda.compile(SRC).key


def test_compile_only_builds_but_never_launches(monkeypatch):
    monkeypatch.setenv("KFORGE_COMPILE_ONLY", "1")
    m = cuda.compile(SRC)
    with pytest.raises(cuda.CudaError, match="compile-only"):
        m.scale(grid=1, block=32, args=())


def test_arguments_are_checked_before_launch():
    k = cuda.compile(SRC).scale
    with pytest.raises(TypeError, match="takes 4 arguments, 2 given"):
        k._convert((1, 2), 0)
    with pytest.raises(ValueError, match=r"\.cuda\(\)"):
        k._convert((torch.ones(4), torch.ones(4), 4, 1.0), 0)
    with pytest.raises(TypeError, match="is an integer, got float"):
        cuda.compile(SRC).kernel("scale", argtypes=[ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
                                                    ctypes.c_float])._convert((0, 0, 1.5, 1.0), 0)


@pytest.mark.parametrize("text, kind", [
    ("CUDA error: an illegal memory access was encountered", "illegal_memory_access"),
    ("CUDA error: unspecified launch failure", "kernel_fault"),
    ("CUDA out of memory. Tried to allocate 320.00 GiB", "device_oom"),
    ("CUDA error: device-side assert triggered", "device_assert"),
    ("CUDA error: misaligned address", "illegal_memory_access"),
    ("CUDA error: unspecified launch failure\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
     "kernel_fault"),
])
def test_gpu_errors_get_names(text, kind):
    assert gpu_errors.classify(RuntimeError(text)) == kind
    assert gpu_errors.hint(kind)


def test_ordinary_errors_are_not_gpu_errors():
    assert gpu_errors.classify(RuntimeError("Expected all tensors on the same device, cuda:0 and cpu")) is None
    assert gpu_errors.classify(cuda.CudaError("launching k with grid (1, 1, 1) failed: CUDA_ERROR_INVALID_VALUE")) \
        == "launch_failure"


def test_load_inline_is_keyed_by_content_and_survives_stale_locks(tmp_path, monkeypatch):
    from torch.utils import cpp_extension

    calls = []

    def fake_load_inline(name, cpp_sources, cuda_sources=None, functions=None, extra_cflags=None,
                         build_directory=None, verbose=False, is_python_module=True):
        calls.append((name, build_directory))
        assert not os.path.exists(os.path.join(build_directory, "lock")), "stale torch lock not cleared"
        return f"module {name}"

    monkeypatch.setattr(cpp_extension, "load_inline", fake_load_inline)
    monkeypatch.setattr(cpp_extension, "_get_build_directory", lambda name, verbose: str(tmp_path / name))
    monkeypatch.setattr(cpp_extension, "_import_module_from_library", lambda name, path, py: f"cached {name}")
    inline_cache.install()
    inline_cache.install()  # idempotent
    load = cpp_extension.load_inline
    first = load("ext", "int f();", functions=["f"])
    assert first.startswith("module ext_") and len(calls) == 1
    os.makedirs(calls[0][1], exist_ok=True)
    assert load("ext", "int f();", functions=["f"]).startswith("cached ext_")  # built before: no rebuild
    other = load("ext", "int g();", functions=["g"])  # same name, other source: its own build
    assert other != first and len(calls) == 2
    stale = tmp_path / calls[1][0].replace("module ", "")
    os.unlink(os.path.join(calls[1][1], inline_cache._MARKER))
    open(os.path.join(calls[1][1], "lock"), "w").close()  # left by a build that was killed
    load("ext", "int g();", functions=["g"])
    assert len(calls) == 3, stale


def test_load_inline_is_keyed_when_imported_after_install():
    code = textwrap.dedent("""
        import sys
        import torch
        from kforge_kernels import inline_cache
        inline_cache.install()
        print("torch.utils.cpp_extension" in sys.modules)
        from torch.utils.cpp_extension import load_inline
        print(getattr(load_inline, "_kforge_keyed", False))
    """)
    worker_dir = os.path.dirname(os.path.dirname(cuda.__file__))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=worker_dir, timeout=120)
    assert out.stdout.split() == ["False", "True"], out.stderr


def test_triton_interpreter_loops_over_scalar_arguments():
    code = textwrap.dedent("""
        import torch, triton, triton.language as tl
        from kforge_kernels import triton_interp
        triton_interp.install()
        @triton.jit
        def k(x_ptr, y_ptr, R, BLOCK: tl.constexpr):
            acc = tl.zeros([BLOCK], dtype=tl.float32)
            for r in range(0, R):
                acc += tl.load(x_ptr + r * BLOCK + tl.arange(0, BLOCK))
            tl.store(y_ptr + tl.arange(0, BLOCK), acc)
        x = torch.randn(5, 8)
        y = torch.empty(8)
        k[(1,)](x, y, 5, BLOCK=8)
        assert torch.allclose(y, x.sum(0), atol=1e-5), (y, x.sum(0))
        print("ok")
    """)
    worker_dir = os.path.dirname(os.path.dirname(cuda.__file__))
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=worker_dir)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]


# -- on a GPU ------------------------------------------------------------------------------------
@needs_gpu
def test_launch_on_torch_tensors():
    m = cuda.compile(SRC, name_expressions=["fill<7>"], arch_override=_device_arch())
    x = torch.randn(1000, device="cuda")
    y = torch.empty_like(x)
    m.scale(grid=4, block=256, args=(x, y, x.numel(), 2.0))
    torch.testing.assert_close(y, x * 2)
    z = torch.zeros(32, device="cuda")
    m.kernel("fill<7>")[1, 32](z)
    assert (z == 7).all()
    w = torch.empty(1024, device="cuda")
    m.big_smem(grid=1, block=1024, args=(w,), shared_mem=100 * 1024)  # above 48 KB: opted in automatically
    torch.testing.assert_close(w, torch.arange(1023, -1, -1, device="cuda", dtype=torch.float32))
    assert m.scale.attributes()["max_threads_per_block"] >= 256


@needs_gpu
def test_bad_launches_are_explained():
    m = cuda.compile(SRC, arch_override=_device_arch())
    x = torch.randn(16, device="cuda")
    with pytest.raises(TypeError, match="float64"):
        m.scale(grid=1, block=16, args=(x.double(), x, 16, 1.0))
    with pytest.raises(cuda.CudaError, match="2048 threads per block; the limit is 1024"):
        m.scale(grid=1, block=2048, args=(x, x, 16, 1.0))


@needs_gpu
def test_cuda_timer_reports_device_and_clocks():
    from kforge_worker.measure.cuda_timing import CudaTimer

    timer = CudaTimer("cuda")
    times = timer.measure(lambda: torch.cuda._sleep(200_000), 5)
    assert len(times) == 5 and all(t > 0.02 for t in times)
    info = timer.info()
    assert info["timer"] == "cuda_events" and info["l2_flush_bytes"] >= 2 * info["l2_bytes"]
    assert "sm_clock_mhz" in timer.device_state() or "clocks_unavailable" in info


@needs_gpu
def test_cuda_timer_counts_work_left_on_other_streams():
    from kforge_worker.measure.cuda_timing import CudaTimer

    timer = CudaTimer("cuda")
    side = torch.cuda.Stream()

    def escape():
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(1_000_000)  # about 0.5 ms at 2 GHz, none of it on the timed stream

    times = timer.measure(escape, 3)
    assert min(times) > 0.3, times
    assert timer.device_state()["escaped_reps"] == 3
    honest = timer.measure(lambda: torch.cuda._sleep(200_000), 5)
    assert timer.device_state()["escaped_reps"] == 3, honest


def _device_arch() -> str:
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}{'a' if major == 9 else ''}"
