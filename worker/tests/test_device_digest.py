"""device_digest: the digest kernel gives tensors.digest's sums bit for bit (needs an NVIDIA GPU)."""

import json
import os
import subprocess
import sys

import pytest
import torch

from kforge_worker.exchange import device_digest, tensors

pytestmark = pytest.mark.skipif(not torch.cuda.is_available() or torch.version.cuda is None,
                                reason="the digest kernel runs on an NVIDIA GPU; this machine has none")


def by_operators(t: torch.Tensor, monkeypatch) -> list:
    with monkeypatch.context() as m:
        m.setattr(device_digest, "sums", lambda flat, weights: None)
        return tensors.digest([t])


@pytest.mark.parametrize("nbytes", [0, 1, 15, 16, 17, 4095, 4096, 4097, 16 * 4096 + 3, 17 * 4096 + 5,
                                    (1 << 16) * 4096 + 4096 * 3 + 7, 3 * (1 << 20) + 11])
def test_the_kernel_gives_the_operator_paths_sums(nbytes, monkeypatch):
    g = torch.Generator(device="cuda").manual_seed(nbytes)
    x = torch.randint(-128, 128, (nbytes,), dtype=torch.int8, device="cuda", generator=g)
    expected = by_operators(x, monkeypatch)
    assert tensors.digest([x]) == expected
    assert device_digest.unavailable_reason() is None


@pytest.mark.parametrize("nbytes", [1, 15, 16, 17, 4097, 17 * 4096 + 5, 3 * (1 << 20) + 11])
def test_a_copy_that_digests_copies_the_bytes_and_gives_their_sums(nbytes):
    g = torch.Generator(device="cuda").manual_seed(nbytes)
    raw = torch.randint(0, 256, (nbytes,), dtype=torch.uint8, device="cuda", generator=g)
    dst = torch.full((nbytes + 16,), 7, dtype=torch.uint8, device="cuda")
    sums = tensors.copy_with_sums(raw, dst[:nbytes])
    assert sums == tensors.digest([raw])[0][2:]
    assert torch.equal(dst[:nbytes], raw) and bool((dst[nbytes:] == 7).all())  # nothing past the end


def test_float_tensors_views_and_extreme_bytes_agree(monkeypatch):
    cases = [torch.randn(1000, 333, device="cuda"), torch.randn(4097, dtype=torch.float16, device="cuda")[1:],
             torch.full((5 * 4096 + 9,), -128, dtype=torch.int8, device="cuda"),
             torch.full((3 * 4096,), 127, dtype=torch.int8, device="cuda"),
             torch.randn(64, 64, device="cuda").t()]  # not contiguous: digested as its contiguous copy
    for t in cases:
        assert tensors.digest([t]) == by_operators(t, monkeypatch)


def test_a_changed_or_moved_byte_changes_the_kernels_digest():
    x = torch.randint(-128, 128, (20 * 4096,), dtype=torch.int8, device="cuda")
    x[10], x[11], x[4096 + 10] = 1, 2, 3  # the bytes moved below differ
    seen = {str(tensors.digest([x]))}
    for change in ("byte", "along", "down"):
        y = x.clone()
        if change == "byte":
            y[5000] += 1
        elif change == "along":
            y[[10, 11]] = y[[11, 10]]
        else:
            y[[10, 4096 + 10]] = y[[4096 + 10, 10]]
        seen.add(str(tensors.digest([y])))
    assert len(seen) == 4


def test_a_workers_warm_up_builds_its_kernels_before_any_trial(tmp_path):
    # A fresh process with an empty private cache, as a sandboxed candidate starts: the warm-up
    # builds the digest and compare kernels, reports none of it as the candidate's builds, and the
    # first digest of a trial-sized tensor afterwards builds nothing.
    code = """
import json, torch
from kforge_kernels import buildinfo, cuda
from kforge_worker.checks import compare, precision, runtime_checks
from kforge_worker.common import session
from kforge_worker.exchange import device_compare, device_digest, tensors
seen = []
real = cuda._record
cuda._record = lambda *a, **k: (seen.append(a[2]), real(*a, **k))
session.warm({"device": "cuda"}, checks=(tensors.ready_digest, compare.ready_device, precision.ready_device,
                                         runtime_checks.ready_device))
after_warm = list(seen)
tensors.digest(torch.ones(1 << 24, device="cuda"))
print(json.dumps({"warm": after_warm, "after": seen[len(after_warm):], "reported": buildinfo.events(),
                  "digest": device_digest.unavailable_reason(), "compare": device_compare.unavailable_reason()}))
"""
    worker = os.path.dirname(os.path.dirname(os.path.dirname(tensors.__file__)))
    env = {**os.environ, "KFORGE_LAUNCH_CACHE": str(tmp_path), "PYTHONPATH": worker}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    facts = json.loads(out.stdout.strip().splitlines()[-1])
    assert facts["digest"] is None and facts["compare"] is None
    assert facts["warm"] == [False, False]  # two modules, built (not cache hits) in the warm-up
    assert facts["after"] == [] and facts["reported"] == []
