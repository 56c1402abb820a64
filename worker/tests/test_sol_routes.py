"""The speed-of-light bound per route: the fastest arithmetic the precision policy allows on the device."""

import torch

from kforge_worker.checks import sol

# An H200 as kforge measured it (fp32 FFMA rate of cuBLAS, TF32 tensor cores), and its bandwidth.
PEAKS = {"flops": {"float32": 50.6e12, "tfloat32": 420e12, "bfloat16": 705e12},
         "bandwidth": [{"working_set_bytes": 1 << 32, "bytes_per_s": 4.658e12}]}
GEMM = 2 * 8192 ** 3  # an fp32 8192^3 GEMM: compute-bound on any route


def test_strict_fp32_gemm_bound_includes_error_compensated_tensor_cores():
    bound = sol.speed_of_light(GEMM, 3 * 8192 * 8192 * 4, torch.float32, PEAKS, "strict")
    assert bound["route"].startswith("3xTF32") and bound["peak_flops_per_s"] == 420e12 / 3
    assert [r["peak_flops_per_s"] for r in bound["routes"]] == [50.6e12, 420e12 / 3]
    # A 3xTF32 kernel 1.4x faster than cuBLAS's FFMA GEMM is within this bound, not "impossible".
    cublas_ms = 1e3 * GEMM / 50.6e12 / 0.99
    assert cublas_ms / 1.4 > bound["sol_ms"]


def test_strict_fp32_includes_error_compensated_fp16_where_fp16_is_measured():
    # An H200's fp16 tensor cores (measured): 3xFP16 at a third of that beats 3xTF32, and a kernel
    # taking that route (an fp16 hi/lo split, accepted by the float64 audit) stays under 100%.
    peaks = {**PEAKS, "flops": {**PEAKS["flops"], "float16": 720e12}}
    bound = sol.speed_of_light(GEMM, 3 * 8192 * 8192 * 4, torch.float32, peaks, "strict")
    assert bound["route"].startswith("3xFP16") and bound["peak_flops_per_s"] == 720e12 / 3
    assert [r["peak_flops_per_s"] for r in bound["routes"]] == [50.6e12, 420e12 / 3, 720e12 / 3]
    relaxed = sol.speed_of_light(GEMM, 1, torch.float32, peaks, "relaxed")
    assert [r["route"] for r in relaxed["routes"]][1].startswith("TF32") and len(relaxed["routes"]) == 2


def test_relaxed_allows_tf32_itself_and_other_dtypes_keep_their_own_rate():
    assert sol.speed_of_light(GEMM, 1, torch.float32, PEAKS, "relaxed")["peak_flops_per_s"] == 420e12
    bf16 = sol.speed_of_light(GEMM, 1, torch.bfloat16, PEAKS, "strict")
    assert bf16["peak_flops_per_s"] == 705e12 and len(bf16["routes"]) == 1


def test_without_a_tf32_measurement_the_fp32_rate_is_the_only_route():
    peaks = {"flops": {"float32": 1e11}, "bandwidth": PEAKS["bandwidth"]}  # a CPU: no tensor cores
    bound = sol.speed_of_light(GEMM, 1, torch.float32, peaks, "strict")
    assert bound["peak_flops_per_s"] == 1e11 and len(bound["routes"]) == 1


def test_without_counted_flops_no_arithmetic_route_is_named():
    # No GEMM FLOPs (a copy): the bytes alone bound it, so no tensor-core route is claimed.
    bound = sol.speed_of_light(0, 12_884_901_888, torch.float32, PEAKS, "strict")
    assert bound["bound"] == "memory" and "route" not in bound and bound["routes"] == []
    assert bound["sol_ms"] == 1e3 * 12_884_901_888 / 4.658e12
