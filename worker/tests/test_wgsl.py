"""kforge_kernels.wgsl, the wgpu target's helper, on whatever adapter wgpu finds (lavapipe in CI)."""

import os
import subprocess
import sys

import pytest
import torch

wgpu = pytest.importorskip("wgpu", reason="wgpu not installed (worker/requirements.txt)")
if wgpu.gpu.request_adapter_sync() is None:
    pytest.skip("no wgpu adapter (install mesa-vulkan-drivers for lavapipe)", allow_module_level=True)

from kforge_kernels import buildinfo, wgsl  # noqa: E402

COPY_PLUS = """
override n: u32;
override add: f32;
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> y: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    if (gid.x < n) {
        y[gid.x] = x[gid.x] + add;
    }
}
"""


def test_launch_writes_outputs_back_and_overrides_specialise():
    kern = wgsl.build(COPY_PLUS)
    x = torch.arange(100, dtype=torch.float32)
    for add in (1.5, -2.0):  # two pipelines, one per override value
        y = torch.zeros(100)
        kern.launch((2,), x, y, n=100, add=add)
        assert torch.equal(y, x + add)
    assert len(kern._pipelines) == 2
    assert any(e["path"] == "wgsl" and e["adapter"] for e in buildinfo.events())


def test_adapter_is_the_high_performance_choice():
    # A GPU, when wgpu sees one, before a CPU adapter such as lavapipe; the name recorded with builds says which.
    info = wgsl.adapter_info()
    adapters = [a.info for a in wgpu.gpu.enumerate_adapters_sync()]
    assert (info["name"], info["backend"], info["type"]) in {
        (a["device"], a["backend_type"], a["adapter_type"]) for a in adapters}
    if any(a["adapter_type"] != "CPU" for a in adapters):
        assert info["type"] != "CPU", (info, adapters)
    assert wgsl.adapter_name() == f"{info['name']} ({info['backend']}, {info['type']})"


def test_vulkan_driver_files_choose_the_driver():
    # What bench/wgpu_gpu_check.sh relies on to name NVIDIA's driver: VK_DRIVER_FILES limits the Vulkan
    # drivers wgpu sees, WGPU_BACKEND_TYPE the back end (here lavapipe's, the one CI has).
    icd = "/usr/share/vulkan/icd.d/lvp_icd.x86_64.json"
    if not os.path.exists(icd):
        pytest.skip(f"no lavapipe driver file {icd}")
    worker = os.path.dirname(os.path.dirname(os.path.abspath(wgsl.__file__)))
    env = dict(os.environ, VK_DRIVER_FILES=icd, VK_ICD_FILENAMES=icd, WGPU_BACKEND_TYPE="Vulkan", PYTHONPATH=worker)
    out = subprocess.run([sys.executable, "-c", "from kforge_kernels import wgsl; print(wgsl.adapter_name())"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("(Vulkan, CPU)") and "llvmpipe" in out.stdout, out.stdout


def test_build_is_cached_per_source():
    assert wgsl.build(COPY_PLUS) is wgsl.build(COPY_PLUS)


def test_int64_indices_are_read_as_u32_pairs():
    kern = wgsl.build("""
@group(0) @binding(0) var<storage, read> idx: array<u32>;
@group(0) @binding(1) var<storage, read_write> low: array<u32>;
@compute @workgroup_size(4)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    low[gid.x] = idx[2u * gid.x];
}
""")
    idx = torch.tensor([0, 7, 123456, 2**31 - 1], dtype=torch.int64)
    low = torch.zeros(4, dtype=torch.int32)
    kern.launch((1,), idx, low)
    assert low.tolist() == idx.tolist()


def test_tensors_not_a_multiple_of_4_bytes_are_padded_and_trimmed():
    kern = wgsl.build("""
@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> y: array<u32>;
@compute @workgroup_size(1)
fn main() {
    y[0] = x[0] + 0x01010101u;   // every byte + 1
}
""")
    x = torch.tensor([1, 2, 3], dtype=torch.uint8)
    y = torch.zeros(3, dtype=torch.uint8)
    kern.launch((1,), x, y)
    assert y.tolist() == [2, 3, 4]


def test_bad_uses_are_clear_errors():
    kern = wgsl.build(COPY_PLUS)
    with pytest.raises(TypeError, match="declares 2 bindings in group 0; 1 tensors given"):
        kern.launch((1,), torch.zeros(4), n=4, add=0.0)
    with pytest.raises(TypeError, match="pass scalars as override constants"):
        kern.launch((1,), torch.zeros(4), 3, n=4, add=0.0)
    with pytest.raises(ValueError, match="read_write: its tensor must be contiguous"):
        kern.launch((1,), torch.zeros(4), torch.zeros(4, 2).t(), n=4, add=0.0)
    with pytest.raises(wgsl.CompileError, match="numbered 0..n-1"):
        wgsl.build("@group(0) @binding(1) var<storage, read> x: array<f32>;\n@compute @workgroup_size(1) fn main() {}")
    with pytest.raises(wgsl.CompileError) as e:
        wgsl.build("@compute @workgroup_size(1) fn main() { let a: f32 = undeclared; }")
    assert "undeclared" in e.value.log
