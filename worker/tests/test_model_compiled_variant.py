"""`kforge model`'s end to end with torch.compile: the installed kernels as custom ops, compiled with
the rest of the model (the variant kforge+torch.compile), measured by the measuring process and
verified by the trusted side like every variant."""

import json
from argparse import Namespace

import pytest
import torch

from kforge_worker.model import analysis, finish

MODEL = '''
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(16)
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        return self.fc(self.ln(x))


def get_model():
    return Net()


def get_inputs():
    return [torch.randn(8, 16)]
'''

# The LayerNorm region's kernel, written out.
KERNEL = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.LayerNorm(16)

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return (x - mean) / torch.sqrt(var + self.block.eps) * self.block.weight + self.block.bias
'''


@pytest.mark.slow  # two inductor compiles (torch.compile, kforge+torch.compile): 1-2 min on 2 cores
def test_kernels_under_torch_compile_are_measured_and_verified(tmp_path):
    torch.set_num_threads(1)
    (tmp_path / "net.py").write_text(MODEL)
    out = tmp_path / "out"
    data = analysis.analyze(str(tmp_path / "net.py"), {}, out, reps=2, warmup=1)
    norm = next(r for r in data["regions"] if r["kind"] == "norm")
    (tmp_path / "best.py").write_text(KERNEL)
    kernels = {norm["name"]: {"run": 1, "status": "finished", "file": str(tmp_path / "best.py"), "speedup": 2.0}}
    report = finish.finish(out, kernels, Namespace(threads=1, reps=3, no_compile=False, timeout=600))
    measured = json.loads((out / "e2e-all.json").read_text())
    assert measured["errors"] == {}, measured["errors"]
    assert set(measured["variants"]) == {"eager", "kforge", "kforge+torch.compile", "torch.compile"}
    assert measured["verdicts"]["kforge+torch.compile"]["correct"] is True, measured["verdicts"]
    patch = (out / "patch.py").read_text()
    assert "custom_op" in patch and "def apply(model, regions=None, custom_ops=False)" in patch
    if report["installed"]:
        assert report["compiled_verdict"]["correct"] is True
        assert "kforge+torch.compile" in report["variants"]
