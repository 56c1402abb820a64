"""patch.py's kernels as torch.library custom ops: torch.compile keeps each installed kernel as one
call in the compiled graph (the kernel inside the compiled model), and the compiled patched model
computes what the kernel computes."""

import importlib.util
import os
import subprocess
import sys

import torch

from kforge_worker.model import patch_writer

# A region's kernel as its run's best.py would be: ModelNew with the region's weight names. It
# counts its calls, so the test sees that the compiled model runs it.
KERNEL = '''
import torch
import torch.nn as nn

CALLS = []


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.LayerNorm(16)

    def forward(self, x):
        CALLS.append(tuple(x.shape))
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.block.eps) * self.block.weight + self.block.bias
'''


class Tiny(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(16)
        self.fc = torch.nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(self.ln(x)).relu()


def load_patch(tmp_path, kernel=KERNEL):
    path = tmp_path / "patch.py"
    patch_writer.write(str(path), "tiny.py", [{"region": "region-1", "instances": [["ln"]], "source": kernel}])
    spec = importlib.util.spec_from_file_location(f"patch_{id(tmp_path)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as end_to_end.py does: torch.compile looks modules up by name
    spec.loader.exec_module(module)
    return module


def model():
    torch.manual_seed(0)
    m = Tiny().eval()
    with torch.no_grad():
        m.ln.weight.uniform_(0.5, 1.5)
        m.ln.bias.uniform_(-0.5, 0.5)
    return m


def test_compiled_patched_model_keeps_the_kernel_as_a_custom_op(tmp_path):
    patch = load_patch(tmp_path)
    want = model()
    x = torch.randn(4, 16)
    patched = patch.apply(model(), custom_ops=True)
    graphs = []

    def backend(gm, example_inputs):
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return gm

    torch._dynamo.reset()
    compiled = torch.compile(patched, backend=backend, fullgraph=True)
    with torch.no_grad():
        got = compiled(x)
        expected = want(x)
    assert len(graphs) == 1
    ops = [t for t in graphs[0] if t.startswith("kforge.")]
    assert len(ops) == 1 and ops[0].startswith("kforge.region_1_"), graphs[0]
    # The kernel ran (once per call of the compiled model), and its output is the model's.
    assert patched.ln.kernel.forward.__globals__["CALLS"] == [(4, 16)]
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


def test_dynamic_shapes_reach_the_kernel_through_the_fake_implementation(tmp_path):
    patch = load_patch(tmp_path)
    patched = patch.apply(model(), custom_ops=True)
    torch._dynamo.reset()
    compiled = torch.compile(patched, backend="aot_eager", dynamic=True, fullgraph=True)
    with torch.no_grad():
        for rows in (3, 5, 7):
            x = torch.randn(rows, 16)
            torch.testing.assert_close(compiled(x), model()(x), atol=1e-5, rtol=1e-5)
    assert patched.ln.kernel.forward.__globals__["CALLS"][-3:] == [(3, 16), (5, 16), (7, 16)]


def test_without_custom_ops_the_kernel_is_a_plain_module(tmp_path):
    patch = load_patch(tmp_path)
    patched = patch.apply(model())
    assert type(patched.ln).__name__ == "ModelNew"
    x = torch.randn(2, 16)
    with torch.no_grad():
        torch.testing.assert_close(patched(x), model()(x), atol=1e-5, rtol=1e-5)


# A triton target's kernel: @triton.jit reads its function's source when it is defined, which a
# string executed as patch.py's kernel module has only through the line cache.
TRITON_KERNEL = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layer_norm(x_ptr, w_ptr, b_ptr, y_ptr, n, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n
    x = tl.load(x_ptr + row * n + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n
    d = tl.where(mask, x - mean, 0.0)
    rstd = 1.0 / tl.sqrt(tl.sum(d * d, axis=0) / n + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n + cols, d * rstd * w + b, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.LayerNorm(16)

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.shape[-1]
        _layer_norm[(x.numel() // n,)](x, self.block.weight, self.block.bias, y, n, self.block.eps, BLOCK=16)
        return y
'''


def test_a_triton_kernel_is_installed(tmp_path):
    patch = load_patch(tmp_path, TRITON_KERNEL)  # @triton.jit compiles nothing until a launch
    patched = patch.apply(model())
    kernel = patched.ln.forward.__globals__["_layer_norm"]
    assert type(patched.ln).__name__ == "ModelNew" and "def _layer_norm(" in kernel.src


def test_a_triton_kernel_is_installed_and_runs(tmp_path):
    """In a process of its own: Triton's interpreter (no GPU here) must be chosen before Triton is
    first imported, which torch.compile in this module's other tests does."""
    path = tmp_path / "patch.py"
    patch_writer.write(str(path), "tiny.py", [{"region": "region-1", "instances": [["ln"]], "source": TRITON_KERNEL}])
    check = f"""
import sys, torch
sys.path.insert(0, {str(tmp_path)!r})
import patch
torch.manual_seed(0)
want = torch.nn.LayerNorm(16)
with torch.no_grad():
    want.weight.uniform_(0.5, 1.5)
    want.bias.uniform_(-0.5, 0.5)
model = torch.nn.Sequential()
model.ln = want
patched = patch.apply(model)
assert type(patched.ln).__name__ == "ModelNew", type(patched.ln)
x = torch.randn(3, 16)
with torch.no_grad():
    torch.testing.assert_close(patched(x), torch.nn.functional.layer_norm(x, (16,), want.weight, want.bias),
                               atol=1e-5, rtol=1e-5)
print("ok")
"""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr[-3000:]
