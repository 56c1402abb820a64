"""The speed of light counts the reference's elementwise and transcendental arithmetic (pointwise_cost)."""

import pytest
import torch

from kforge_worker.checks import pointwise_cost, sol

# A CPU whose SIMD units run 1e11 FLOP/s and whose memory streams 1e11 B/s: a softmax's 19 FLOPs per
# element (exp as a 15-FLOP polynomial, 4 for max, subtract, sum, scale) outrun its 8 bytes per element.
CPU = {"flops": {"float32": 1e11}, "bandwidth": [{"working_set_bytes": 1 << 30, "bytes_per_s": 1e11}],
       "key": {"device": "cpu"}}
# An H200 as kforge measured it (test_sol_routes).
H200 = {"flops": {"float32": 50.6e12, "tfloat32": 420e12, "bfloat16": 705e12},
        "bandwidth": [{"working_set_bytes": 1 << 32, "bytes_per_s": 4.658e12}], "key": {"device": "cuda"}}


class Softmax(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)


class Scale(torch.nn.Module):
    def forward(self, x):
        return x * 2.0


class Transpose(torch.nn.Module):
    def forward(self, x):
        return x.t().contiguous()


class MatMul(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def bound_of(model, inputs, peaks, dtype=torch.float32):
    work = sol.count_work(model, inputs)
    with torch.no_grad():
        out = model(*inputs)
    return work, sol.speed_of_light(work["flops"], sol.min_bytes(model, inputs, out), dtype, peaks, "strict",
                                    work["pointwise"])


def test_softmax_counts_one_exp_per_element_and_is_compute_bound_where_its_arithmetic_is_slower():
    x = torch.randn(64, 1024)
    work, bound = bound_of(Softmax(), [x], CPU)
    assert work["flops"] == 0 and work["pointwise"]["by_function"] == {"exp": x.numel()}
    assert bound["transcendentals"] == x.numel() and bound["pointwise_flops"] == 4 * x.numel()
    expected_ms = 1e3 * x.numel() * (4 + pointwise_cost.POLY_FLOPS) / 1e11
    assert bound["pointwise_ms"] == pytest.approx(expected_ms)
    assert bound["bound"] == "compute" and bound["compute_by"] == "pointwise"
    assert bound["sol_ms"] == pytest.approx(expected_ms) and bound["sol_ms"] > bound["memory_ms"]
    assert bound["pointwise"]["route"] == "FMA-unit polynomials" and bound["pointwise"]["sfu_ops_per_s"] is None


def test_a_gpu_splits_the_exps_between_the_special_function_units_and_fma_polynomials():
    n = 1 << 30
    pointwise = {"elementwise_flops": 4 * n, "by_function": {"exp": n}}
    bound = sol.speed_of_light(0, 1, torch.float32, H200, "strict", pointwise)
    sfu = 50.6e12 / 2 * 16 / 128  # 16 SFU results per clock per SM against 128 FMAs
    assert bound["pointwise"]["sfu_ops_per_s"] == pytest.approx(sfu)
    share = bound["pointwise"]["sfu_share"]
    assert 0 < share < 1
    # Both units finish together, and sooner than either route alone.
    sfu_s = share * n / sfu
    fma_s = (4 * n + share * n + (1 - share) * n * pointwise_cost.POLY_FLOPS) / 50.6e12
    assert sfu_s == pytest.approx(fma_s) and bound["pointwise_ms"] == pytest.approx(1e3 * sfu_s)
    assert 1e3 * sfu_s < min(1e3 * n / sfu, 1e3 * 19 * n / 50.6e12)
    assert bound["compute_by"] == "pointwise" and bound["bound"] == "compute"


def test_a_gpu_softmax_of_large_rows_stays_memory_bound():
    # 1.6e9 exps on an H200: the SFUs and FMA units need 0.32 ms, the 12.9 GB of traffic 2.8 ms.
    n = 1_610_612_736
    pointwise = {"elementwise_flops": 4 * n, "by_function": {"exp": n}}
    bound = sol.speed_of_light(0, 8 * n, torch.float32, H200, "strict", pointwise)
    assert bound["bound"] == "memory" and 0 < bound["pointwise_ms"] < bound["memory_ms"]
    assert bound["sol_ms"] == bound["memory_ms"]


def test_pure_data_movement_stays_memory_bound_with_no_counted_arithmetic():
    x = torch.randn(512, 512)
    work, bound = bound_of(Transpose(), [x], CPU)
    assert work["pointwise"] == {"elementwise_flops": 0, "by_function": {}}
    assert bound["bound"] == "memory" and bound["pointwise_ms"] == 0 and bound["sol_ms"] == bound["memory_ms"]
    # One multiply per element is counted, and 8 bytes per element still bound it.
    work, bound = bound_of(Scale(), [x], CPU)
    assert bound["pointwise_flops"] == x.numel() and bound["transcendentals"] == 0
    assert bound["bound"] == "memory" and bound["sol_ms"] == bound["memory_ms"]


def test_a_gemm_bound_is_unchanged_by_the_pointwise_model():
    a, b = torch.randn(128, 64), torch.randn(64, 32)
    work, bound = bound_of(MatMul(), [a, b], H200)
    assert work["flops"] == 2 * 128 * 64 * 32 and work["pointwise"]["elementwise_flops"] == 0
    before = sol.speed_of_light(work["flops"], bound["bytes"], torch.float32, H200, "strict")
    assert bound["sol_ms"] == before["sol_ms"] and bound["route"] == before["route"]
    assert bound["compute_by"] == "gemm" and bound["gemm_ms"] == bound["compute_ms"]


def test_a_cpu_gemm_shares_the_fma_units_with_the_elementwise_work():
    gemm = 2 * 1024 ** 3
    pointwise = {"elementwise_flops": 1024 ** 2, "by_function": {"tanh": 1024 ** 2}}
    bound = sol.speed_of_light(gemm, 1, torch.float32, CPU, "strict", pointwise)
    expected = 1e3 * (gemm + 1024 ** 2 * (1 + pointwise_cost.POLY_FLOPS)) / 1e11
    assert bound["pointwise"]["shares_fma_units_with_gemm"] and bound["compute_by"] == "gemm+pointwise"
    assert bound["compute_ms"] == pytest.approx(expected) and bound["compute_ms"] > bound["gemm_ms"]
    # On the GPU the GEMM runs on the tensor cores beside them: the slower unit bounds it.
    gpu = sol.speed_of_light(gemm, 1, torch.float32, H200, "strict", pointwise)
    assert not gpu["pointwise"]["shares_fma_units_with_gemm"]
    assert gpu["compute_ms"] == max(gpu["gemm_ms"], gpu["pointwise_ms"]) and gpu["compute_by"] == "gemm"


def test_operators_are_counted_at_their_stated_cost():
    x = torch.rand(10, 10) + 0.5
    cases = [(lambda t: torch.nn.functional.gelu(t), ({"exp": 100, "reciprocal": 100}, 1800)),
             (lambda t: torch.nn.functional.gelu(t, approximate="tanh"), ({"tanh": 100}, 800)),
             (lambda t: torch.sigmoid(t), ({"tanh": 100}, 300)),
             (lambda t: t.pow(2), ({}, 100)),
             (lambda t: t.pow(0.5), ({"sqrt": 100}, 0)),
             (lambda t: t.pow(1.7), ({"exp": 100, "log": 100}, 100)),
             (lambda t: t.sum(), ({}, 100)),
             (lambda t: torch.nn.functional.layer_norm(t, (10,)), ({}, 700)),
             (lambda t: torch.log_softmax(t, -1), ({"exp": 100}, 400)),
             (lambda t: torch.where(t > 1, t, -t), ({}, 300))]

    class Wrap(torch.nn.Module):
        def __init__(self, fn):
            super().__init__()
            self.fn = fn

        def forward(self, t):
            return self.fn(t)

    for fn, (functions, flops) in cases:
        work = sol.count_work(Wrap(fn), [x])["pointwise"]
        assert (work["by_function"], work["elementwise_flops"]) == (functions, flops), fn
