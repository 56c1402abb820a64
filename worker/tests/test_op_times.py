"""Per-operator times of a forward, for the share of the candidate's time its library calls take."""

import torch

from kforge_worker.measure import op_times


def test_a_gemm_beside_a_small_epilogue_takes_nearly_all_of_the_call():
    """A 768x768 matmul and a ReLU of 768 values: the matmul's computation ("matmul", as the target's
    allowed calls name it) takes most of the call, the ReLU a small part; every call is timed whole."""
    a, b = torch.randn(768, 768), torch.randn(768, 768)
    bias = torch.randn(768)

    def forward():
        y = torch.mm(a, b)
        return (y[0] + bias).relu_()

    measured = op_times.measure(forward, "cpu", reps=3)
    assert measured["reps"] == 3
    assert measured["ops"]["matmul"] > 5 * measured["ops"]["relu"]
    assert measured["ops"]["matmul"] / measured["seconds"] > 0.5
    assert sum(measured["ops"].values()) <= measured["seconds"]


def test_a_forward_of_its_own_kernels_spends_nothing_in_library_calls():
    x = torch.randn(1024)
    measured = op_times.measure(lambda: x.numpy().sum(), "cpu", reps=2)  # numpy's sum: no aten computation
    assert "matmul" not in measured["ops"] and "sum" not in measured["ops"] and measured["seconds"] > 0
