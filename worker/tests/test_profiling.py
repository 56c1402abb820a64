"""torch.profiler in the worker (`kforge profile`): per-call figures, host operators, the CUDA range."""

import pytest
import torch

from kforge_worker.measure import profiling


def test_cpu_profile_counts_operators_per_call():
    a, b = torch.randn(128, 128), torch.randn(128, 128)

    def call():
        with torch.no_grad():
            torch.relu(torch.mm(a, b))

    result = profiling.profile(call, "cpu", reps=4)
    assert result["reps"] == 4 and result["device"] == "cpu"
    assert result["kernels_per_call"] == 0 and result["kernels"] == []
    names = {op["name"]: op for op in result["host_ops"]}
    assert names["aten::mm"]["calls_per_call"] == 1.0 and names["aten::relu"]["calls_per_call"] == 1.0
    assert result["wall_us_per_call"] > 0
    # The operators run inside the call: they cannot take more than the call itself.
    assert 0 < result["host_ops_us_per_call"] <= result["wall_us_per_call"] * 1.05
    assert result["threads"] == torch.get_num_threads()


def test_code_outside_torch_operators_is_counted_as_such():
    x = torch.randn(1000)

    def call():
        total = 0.0
        for _ in range(20000):  # plain Python: invisible to torch.profiler's operator list
            total += 1.0
        torch.neg(x)

    result = profiling.profile(call, "cpu", reps=2)
    assert result["outside_torch_ops_us_per_call"] > 0.5 * result["wall_us_per_call"]


def test_profile_range_needs_cuda():
    with pytest.raises(ValueError, match="CUDA"):
        profiling.profile_range(lambda: None, "cpu", reps=1)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU: torch.cuda.is_available() is False")
def test_cuda_profile_lists_kernels_and_launches():
    x = torch.randn(1 << 20, device="cuda")

    def call():
        torch.relu(x * 2)

    result = profiling.profile(call, "cuda", reps=5)
    assert result["kernels_per_call"] == 2.0
    assert result["launch_api_calls_per_call"] >= 2.0
    assert abs(sum(k["share"] for k in result["kernels"]) - 1.0) < 1e-6
    assert 0 < result["device_busy_us_per_call"] < result["wall_us_per_call"]
