"""Fixtures shared by the worker tests and the end-to-end tests: the real load_inline builds that make
kforge's precompiled headers, once per session (each takes minutes on CI's two cores)."""

import os
import shutil

import pytest

# load_inline's usual CUDA source (a kernel and its launcher), for the builds of the `headers` fixture.
KERNEL = r"""
#include <torch/extension.h>
__global__ void twice(const float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }
torch::Tensor run(torch::Tensor x) {
    auto y = torch::empty_like(x);
    int n = x.numel();
    twice<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
    return y;
}
"""


def inline_params(name, body=KERNEL):
    # No flags of its own and kforge's default architecture: the flags of a usual KernelBench
    # candidate built by `kforge eval`, so the end-to-end builds find these headers.
    return {"name": name, "cpp_sources": "torch::Tensor run(torch::Tensor x);", "cuda_sources": body,
            "functions": ["run"]}


@pytest.fixture(scope="session")
def headers(tmp_path_factory):
    """A builder build with no headers yet (which makes them), then another source's build (which
    finds them): (the store, the second build's folder, both replies, the builds' environment).
    Session-wide: each real load_inline build takes minutes on CI's two cores, so every test that
    needs a real build uses these two (their tests share the xdist_group "build_pch": one worker).
    The store is the `pch` folder of a kforge cache (``store.parent``), which `kforge eval` can be
    pointed at with KFORGE_CACHE_DIR."""
    pytest.importorskip("torch")
    from kforge_worker.builder import sandboxed_build

    base = tmp_path_factory.mktemp("pch")
    store = base / "cache" / "pch"
    env = {"KFORGE_PCH_DIR": str(store), "TORCH_EXTENSIONS_DIR": str(base / "ext")}
    for folder in (store, base / "b1", base / "b2", base / "ext"):
        folder.mkdir(parents=True)
    # nvcc through the lanes (test_nvcc_lanes), for the architecture kforge's GPU workers default to.
    unset = ("PYTORCH_NVCC", "TORCH_CUDA_ARCH_LIST", "KFORGE_CUDA_ARCH")
    saved = {k: os.environ.get(k) for k in (*env, *unset)}
    for k in unset:
        os.environ.pop(k, None)
    os.environ.update(env)
    try:
        first = sandboxed_build.build_load_inline({"params": inline_params("pch_first")}, [], str(base / "b1"), 600)
        later = inline_params("pch_later", KERNEL.replace("2 * x[i]", "3 * x[i]"))
        second = sandboxed_build.build_load_inline({"params": later}, [], str(base / "b2"), 600)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    yield store, base / "b2", first, second, env
    shutil.rmtree(store, ignore_errors=True)  # a gigabyte of headers
