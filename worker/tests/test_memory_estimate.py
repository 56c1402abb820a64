"""The memory estimate traces a problem on the meta device: exact byte counts, nothing allocated."""

from kforge_worker.checks import memory_estimate

LINEAR = """
import torch
import torch.nn as nn

batch = 64
features = 256
out = 128

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(features, out)

    def forward(self, x):
        y = self.linear(x)      # batch x out
        z = torch.relu(y) * 2   # two more of that size, y still alive
        return z.sum(dim=1)     # batch

def get_inputs():
    return [torch.randn(batch, features)]

def get_init_inputs():
    return []
"""

DATA_DEPENDENT = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x[x > 0]         # its size depends on the values

def get_inputs():
    return [torch.randn(16)]

def get_init_inputs():
    return []
"""


def _write(tmp_path, source):
    p = tmp_path / "problem.py"
    p.write_text(source)
    return str(p)


def test_figures_of_a_linear_layer(tmp_path):
    reply = memory_estimate.estimate({"problem": _write(tmp_path, LINEAR), "overrides": {}, "device": "cpu"})
    assert reply["method"] == "meta"
    assert reply["parameter_bytes"] == (256 * 128 + 128) * 4
    assert reply["input_bytes"] == 64 * 256 * 4
    assert reply["output_bytes"] == 64 * 4
    # At the peak: y, relu(y) and relu(y) * 2 (relu(y) is freed only once the multiplication returned).
    assert reply["forward_peak_bytes"] == 3 * 64 * 128 * 4
    assert reply["device"]["total_bytes"] >= reply["device"]["free_bytes"] > 0


def test_overrides_change_the_sizes(tmp_path):
    reply = memory_estimate.estimate({"problem": _write(tmp_path, LINEAR), "overrides": {"batch": "128"}, "device": "cpu"})
    assert reply["input_bytes"] == 128 * 256 * 4


def test_a_problem_the_meta_device_cannot_run_is_unknown(tmp_path):
    reply = memory_estimate.estimate({"problem": _write(tmp_path, DATA_DEPENDENT), "overrides": {}, "device": "cpu"})
    assert reply["method"] == "unknown"
    assert reply["reason"]
    assert reply["device"]["free_bytes"] > 0


def test_a_problem_is_traced_once_per_process_until_its_file_changes(tmp_path, monkeypatch):
    calls = []
    real = memory_estimate.trace
    monkeypatch.setattr(memory_estimate, "trace", lambda module: calls.append(module) or real(module))
    path = _write(tmp_path, LINEAR)
    first = memory_estimate.estimate({"problem": path, "overrides": {}, "device": "cpu"})
    again = memory_estimate.estimate({"problem": path, "overrides": {}, "device": "cpu"})
    assert len(calls) == 1 and again["input_bytes"] == first["input_bytes"]
    memory_estimate.estimate({"problem": path, "overrides": {"batch": "128"}, "device": "cpu"})
    assert len(calls) == 2  # other overrides: traced
    _write(tmp_path, LINEAR.replace("batch = 64", "batch = 32  # another size"))
    changed = memory_estimate.estimate({"problem": path, "overrides": {}, "device": "cpu"})
    assert len(calls) == 3 and changed["input_bytes"] == 32 * 256 * 4
