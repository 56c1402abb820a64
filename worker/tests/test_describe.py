"""`python -m kforge_worker describe`: the source as it runs and the shapes kforge run's prompts show."""

import json
import subprocess
import sys
from pathlib import Path

from kforge_worker.roles import describe

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.norm = nn.LayerNorm(features)

    def forward(self, x):
        return self.norm(x)


batch_size = 4096
features = (
    393216
)
total = batch_size * features


def get_inputs():
    return [torch.rand(batch_size, features)]


def get_init_inputs():
    return [features]
'''


def test_overrides_are_written_into_the_source_and_the_shapes_follow(tmp_path):
    path = tmp_path / "problem.py"
    path.write_text(PROBLEM)
    d = describe.describe(str(path), {"batch_size": 16, "features": 64})
    assert "batch_size = 16  # --set batch_size=16 (the file says 4096)" in d["source"]
    assert "features = 64  # --set features=64 (the file says 393216)" in d["source"]
    assert "393216\n)" not in d["source"] and "total = batch_size * features" in d["source"]
    assert d["inputs"] == [{"kind": "tensor", "shape": [16, 64], "dtype": "float32"}]
    assert d["init_inputs"] == [{"kind": "int", "value": 64}]
    assert d["outputs"] == [{"kind": "tensor", "shape": [16, 64], "dtype": "float32"}]
    assert d["globals"]["total"] == 1024


def test_without_overrides_the_source_is_the_file_and_nothing_is_allocated(tmp_path):
    path = tmp_path / "problem.py"
    path.write_text(PROBLEM)
    d = describe.describe(str(path), {})  # 4096 x 393216 floats would be 6 GB: drawn on the meta device
    assert d["source"] == PROBLEM
    assert d["inputs"][0]["shape"] == [4096, 393216]


def test_the_command_writes_json(tmp_path):
    path = tmp_path / "problem.py"
    path.write_text(PROBLEM)
    out = tmp_path / "d.json"
    worker = Path(describe.__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-m", "kforge_worker", "describe", str(path), "--set", "batch_size=2",
                    "--set", "features=8", "--json", str(out)], check=True, cwd=worker, timeout=600)
    assert json.loads(out.read_text())["inputs"][0]["shape"] == [2, 8]
