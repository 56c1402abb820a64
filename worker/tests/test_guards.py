"""Calibration, precision audit, speed of light and the judging of runtime facts."""

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

from kforge_worker.checks import calibration, compare, precision, reference_checks, sol
from kforge_worker.common import ops
from kforge_worker.exchange import tensors


class Tiny(nn.Module):
    def forward(self, x):
        return torch.tanh(x) * 1e-5


class Ones(nn.Module):
    def forward(self, x):
        return (x * 0).sum(1) + 1


def _forward(model):
    def f(inputs):
        with torch.no_grad():
            return model(*inputs)
    return f


def _draw(*shape):
    def draw(seed):
        torch.manual_seed(seed)
        return [torch.randn(*shape)]
    return draw


def test_zeros_pass_tiny_outputs_and_the_check_is_tightened():
    m = Tiny()
    report = calibration.calibrate(m, _draw(16, 32), lambda k: 3 + k, _forward(m))
    assert "zeros" in report["passing"] and report["tightened"] and not report["degenerate"]
    assert "zeros" not in report["still_passing"]
    assert calibration.scaled_check(torch.tanh(torch.ones(4)) * 1e-5, torch.zeros(4)) is not None


def test_scaled_check_by_slices_judges_like_the_whole(monkeypatch):
    """Large outputs are checked a slice at a time: the RMS still covers every element, and every
    slice is judged (the bad elements sit in the last, partial slice)."""
    e = torch.randn(3, 33)
    g = e.clone()
    g[2, 30:] += 1e-3  # 3 elements, beyond the scaled tolerance
    whole = calibration.scaled_check(e, g)
    monkeypatch.setattr(calibration, "SCALED_CHECK_SLICE", 7)
    assert calibration.scaled_check(e, g) == whole
    assert whole.startswith("output 0: 3 of 99 elements")
    assert calibration.scaled_check(e, e.clone()) is None


def test_input_independent_reference_is_degenerate():
    m = Ones()
    report = calibration.calibrate(m, _draw(8, 4), lambda k: 3 + k, _forward(m))
    assert report["degenerate"] and not report["tightened"]


def test_precision_audit_floor_keeps_exact_ops_and_flags_bf16():
    x = torch.randn(1000)
    ref = torch.relu(x)
    r64 = [torch.relu(x.double())]
    assert precision.audit(ref, ref.clone(), r64, "strict")["verdict"] == "pass"
    low = torch.relu(x.bfloat16()).float()
    assert precision.audit(ref, low, r64, "strict")["verdict"] == "fail"
    assert precision.audit(ref, low, r64, "relaxed")["verdict"] == "warn"


def test_precision_audit_skips_non_finite_entries_and_leaves_its_arguments_alone():
    x = torch.randn(1000, dtype=torch.float64)
    x[3], x[7] = float("inf"), float("nan")
    ref = torch.tanh(x.float()) * 0 + x.float()  # inf and nan where x has them
    kept = ref.clone()
    r64 = [x.clone()]
    low = ref.bfloat16().float()
    assert precision.audit(ref, ref.clone(), r64, "strict")["verdict"] == "pass"
    assert precision.audit(ref, low, r64, "strict")["verdict"] == "fail"
    assert torch.equal(ref.nan_to_num(), kept.nan_to_num()) and torch.equal(r64[0].nan_to_num(), x.nan_to_num())


@pytest.mark.parametrize("values, finite, largest", [([1.0, -3.0, 2.0], True, 3.0), ([1.0, -3.0, float("inf")], False, 3.0),
                                                     ([float("nan"), 2.0], False, 2.0), ([float("-inf"), -0.5], False, 0.5)])
def test_the_audits_floor_comes_from_the_largest_finite_float64_value(values, finite, largest):
    r64 = torch.tensor(values, dtype=torch.float64)
    entry = precision.Float64Reference(r64.float(), [r64]).entries[0]
    assert entry["all_finite"] is finite
    assert entry["err_ref"] == 0.0  # the float32 values are exact where finite
    assert entry["limit"] == precision.ULPS * torch.finfo(torch.float32).eps * largest


def test_precision_audit_with_the_reference_side_prepared_once_gives_the_same_numbers():
    x = torch.randn(1000)
    ref = torch.tanh(x)
    r64 = [torch.tanh(x.double())]
    prepared = precision.Float64Reference(ref, r64)
    for cand in (ref.clone(), ref + 1e-6, torch.tanh(x.bfloat16()).float()):
        assert precision.audit(ref, cand, prepared, "strict") == precision.audit(ref, cand, r64, "strict")
    same = precision.audit(ref, ref.clone(), prepared, "strict")
    assert same["candidate_error"] == same["reference_error"] > 0


def test_precision_audit_in_small_chunks_gives_the_numbers_of_one_pass(monkeypatch):
    x = torch.randn(37, 29, dtype=torch.float64)
    x[3, 4], x[20, 1] = float("inf"), float("nan")
    ref = x.float()
    r64 = [x.t().contiguous().t()]  # a non-contiguous float64 result, read in logical order
    cands = (ref.clone(), ref + 1e-6, ref.bfloat16().float(), ref.t().contiguous().t() * 1.001)
    whole = [precision.audit(ref, c, r64, "strict") for c in cands]
    monkeypatch.setattr(precision, "CHUNK_ELEMENTS", 7)
    chunked = [precision.audit(ref, c, r64, "strict") for c in cands]
    assert chunked == whole
    assert [a["verdict"] for a in whole] == ["pass", "pass", "fail", "fail"]
    broken = ref.clone()
    broken[36, 28] = float("nan")  # in the last, partial chunk; the float64 result is finite there
    assert precision.audit(ref, broken, r64, "strict")["verdict"] == "fail"


def test_speed_of_light_uses_the_working_set_level():
    peaks = {"flops": {"float32": 1e11}, "bandwidth": [{"working_set_bytes": 1 << 20, "bytes_per_s": 2e11},
                                                       {"working_set_bytes": 1 << 30, "bytes_per_s": 1e10}]}
    small = sol.speed_of_light(0, 1 << 19, torch.float32, peaks)
    big = sol.speed_of_light(2 * 10**9, 1 << 25, torch.float32, peaks)
    assert small["bandwidth_bytes_per_s"] == 2e11 and small["bound"] == "memory"
    assert big["bound"] == "compute" and abs(big["sol_ms"] - 20.0) < 1e-9


def test_speed_of_light_holds_a_working_set_to_the_level_it_fills():
    # An 8 MiB working set still partly sits in a cache that 4 MiB copies measured: held to DRAM's
    # rate (the 128 MiB level) its bound was slower than eager itself.
    peaks = {"flops": {"float32": 1e11}, "bandwidth": [{"working_set_bytes": 256 << 10, "bytes_per_s": 1e11},
                                                       {"working_set_bytes": 4 << 20, "bytes_per_s": 6e10},
                                                       {"working_set_bytes": 128 << 20, "bytes_per_s": 1.5e10}]}
    assert sol.bandwidth_for(peaks, 8 << 20) == 6e10
    assert sol.bandwidth_for(peaks, 4 << 20) == 6e10
    assert sol.bandwidth_for(peaks, 64 << 10) == 1e11  # below every level: the fastest
    assert sol.bandwidth_for(peaks, 1 << 30) == 1.5e10
    # A small level understated by per-call overhead never lowers the rate of a larger one.
    peaks["bandwidth"][1]["bytes_per_s"] = 1e10
    assert sol.bandwidth_for(peaks, 8 << 20) == 1.5e10


def test_flops_of_a_matmul():
    m = nn.Linear(64, 32, bias=False)
    assert sol.count_work(m, [torch.randn(8, 64)])["flops"] == 2 * 8 * 64 * 32


def test_delegation_rules():
    assert ops.delegation({"matmul", "relu"}, {"matmul"}, {"matmul"}) is None
    assert ops.delegation({"matmul"}, {"matmul"}, {"matmul"})[0] == "fail"  # the whole thing, allowed or not
    assert ops.delegation({"add", "mul"}, {"add", "mul"}, set())[0] == "warn"  # arithmetic only
    assert ops.canonical("_softmax") == "softmax" and ops.canonical("relu_") == "relu"


ALLOWED = {"matmul", "conv"}  # the cpu, cuda and triton targets' allowed_torch_calls, canonical


def test_an_allowed_library_call_does_only_work_of_a_kind_the_reference_does():
    gemm, sums = ops.canonical_set(["mm", "relu"]), ops.canonical_set(["mul", "sum", "add"])
    assert ops.delegation(gemm, ops.canonical_set(["mm", "empty", "t"]), ALLOWED) is None
    verdict, why = ops.delegation(ops.canonical_set(["mm"]), ops.canonical_set(["convolution", "view"]), ALLOWED)
    assert verdict == "fail" and "computes no convolution" in why, why  # a 1x1 conv standing in for a matmul
    verdict, why = ops.delegation(sums, ops.canonical_set(["mm", "mul"]), ALLOWED)
    assert verdict == "fail" and "computes no GEMM" in why, why  # matmul(x, ones) for a sum
    # Attention is GEMM work: its matmuls may be library calls.
    assert ops.delegation({"attention", "relu"}, {"matmul"}, ALLOWED) is None


def test_an_allowed_library_call_does_no_more_flops_than_the_reference():
    ref, cand = ops.canonical_set(["mm", "sum", "add"]), ops.canonical_set(["mm"])
    assert ops.delegation(ref, cand, ALLOWED, {"matmul": 1000}, {"matmul": 1000}) is None
    assert ops.delegation(ref, cand, ALLOWED, {"matmul": 1000}, {"matmul": 1200}) is None  # within the margin
    verdict, why = ops.delegation(ref, cand, ALLOWED, {"matmul": 1000}, {"matmul": 20_000})
    assert verdict == "fail" and "20.0x the reference's" in why, why


def test_other_torch_computation_is_delegation_whatever_its_name():
    gelu = ops.canonical_set(["mul", "pow", "add", "tanh"])
    assert ops.delegation(gelu, ops.canonical_set(["gelu", "empty"]), ALLOWED)[0] == "fail"
    assert ops.delegation({"softmax"}, ops.canonical_set(["_log_softmax", "exp"]), ALLOWED)[0] == "fail"
    # Names no table lists count by torch's tags (pointwise, reduction); copies and fills are glue.
    assert ops.canonical("nansum") == "sum" and ops.canonical("lerp") == "lerp" and ops.canonical("gt") == "gt"
    assert {ops.canonical(n) for n in ("clone", "copy_", "_to_copy", "fill_", "zero_", "view")} == {None}
    assert ops.delegation({"relu"}, ops.canonical_set(["gt", "mul"]), ALLOWED)[0] == "fail"  # x * (x > 0)
    # Elementwise arithmetic stays glue beside a reference's heavier work.
    assert ops.delegation(ops.canonical_set(["addmm", "relu"]), ops.canonical_set(["mm", "add"]), ALLOWED) is None


def test_the_recorder_counts_library_flops_by_kind():
    from torch.utils.flop_counter import FlopCounterMode

    from kforge_worker.checks.runtime_checks import _op_recorder

    calls = [lambda: F.linear(torch.randn(8, 16), torch.randn(4, 16), torch.randn(4)),
             lambda: torch.einsum("bij,bjk->bik", torch.randn(3, 8, 16), torch.randn(3, 16, 4)),
             lambda: F.conv2d(torch.randn(2, 4, 10, 10), torch.randn(6, 2, 3, 3), groups=2),
             lambda: F.conv_transpose2d(torch.randn(2, 3, 10, 10), torch.randn(3, 5, 3, 3))]
    for call, kind in zip(calls, ["matmul", "matmul", "conv", "conv"]):
        flops = {}
        with _op_recorder(set(), None, flops):
            call()
        with FlopCounterMode(display=False) as counter:
            call()
        assert flops == {kind: counter.get_total_flops()}


def test_runtime_facts_are_judged_against_the_reference():
    facts = {"events": [["file_io", "open('/etc/hostname')"]], "tampered": [], "new_threads": [], "children": [],
             "plain_tensors": False, "output_types": ["x.Lazy"], "deferred": True, "aliases_inputs": [True],
             "aten_ops": ["mm", "zero_"], "ops_recorded": True}
    names = {f["name"] for f in reference_checks.judge_run(facts, {"plain_tensors": True, "aliases_inputs": False},
                                                           {"matmul"}, set())}
    assert names == {"file_io", "output_type", "deferred_output", "output_aliasing", "torch_delegation"}
    ref_aliases = {f["name"] for f in reference_checks.judge_run(dict(facts, events=[]),
                                                                 {"plain_tensors": True, "aliases_inputs": True},
                                                                 set(), set())}
    assert "output_aliasing" not in ref_aliases


def test_identical_outputs_for_different_inputs():
    ind = reference_checks.Independence()
    assert ind.add(0, torch.ones(3), torch.zeros(3)) is None
    assert ind.add(1, torch.ones(3) * 2, torch.zeros(3))["name"] == "input_independent"


def test_host_fingerprint_tells_bits_dtype_and_shape_apart():
    fp = reference_checks.fingerprint
    x = torch.randn(1 << 20)  # 4 MB
    flipped = x.clone()
    flipped.view(torch.int32)[123_457] ^= 1  # the lowest bit of one value
    assert fp(x) == fp(x.clone()) and fp(x) != fp(flipped)
    assert fp(torch.zeros(4)) != fp(-torch.zeros(4))  # equal values, different bits
    assert fp(x) != fp(x.view(1024, 1024))  # same bytes, another shape
    assert fp(torch.zeros(4)) != fp(torch.zeros(4, dtype=torch.int32))  # same bytes, another dtype
    bf = torch.randn(64, 64).to(torch.bfloat16)  # a dtype numpy has not got
    assert fp(bf.t()) == fp(bf.t().contiguous()) != fp(bf)  # a view is fingerprinted by its values in order
    assert fp([x, (bf, {"k": torch.empty(0)})]) == fp([x.clone(), (bf.clone(), {"k": torch.empty(0)})])
    assert fp([x, bf]) != fp([bf, x])
    z = torch.randn(8, dtype=torch.complex64)
    assert fp(z.conj()) == fp(z.conj().resolve_conj()) != fp(z)  # a lazy conjugate by its values


def test_outputs_equal_to_the_references_are_judged_by_its_fingerprint(monkeypatch):
    digested = []
    monkeypatch.setattr(reference_checks, "fingerprint", lambda obj: digested.append(obj) or tensors.digest(obj))
    ind = reference_checks.Independence()

    def add(trial, reference, candidate):  # as Guard.after_match does, with what the check found
        try:
            identical = compare.compare(reference, candidate)["identical"]
        except compare.Mismatch:
            identical = False
        return ind.add(trial, reference, candidate, identical)

    ref0, ref1 = torch.arange(4.0), torch.arange(4.0) + 1
    assert add(0, ref0, ref0.clone()) is None  # equal: the reference's fingerprint serves both
    assert len(digested) == 1 and ind.candidate[0] == ind.reference[0]
    nan = torch.tensor([float("nan"), 1.0])
    add(1, nan, nan.clone())  # a NaN never equals: fingerprinted on its own
    assert len(digested) == 3
    # A candidate that returns trial 0's outputs for trial 1 is still caught.
    assert add(2, ref1, ref0.clone())["name"] == "input_independent"


def test_flop_count_agrees_with_torch_flop_counter_mode():
    from torch.utils.flop_counter import FlopCounterMode

    cases = [(nn.Conv2d(3, 8, 3), [torch.randn(2, 3, 16, 16)]),
             (nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8)), [torch.randn(8, 64)]),
             (lambda a, b: torch.bmm(a, b), [torch.randn(4, 5, 6), torch.randn(4, 6, 7)])]
    for model, inputs in cases:
        with torch.no_grad(), FlopCounterMode(display=False) as counter:
            model(*inputs)
        assert sol.count_work(model, inputs)["flops"] == counter.get_total_flops() > 0


def test_peaks_command_measures_once_then_reads_the_cache(tmp_path, capsys):
    import json

    from kforge_worker.__main__ import main

    threads = torch.get_num_threads()
    assert main(["peaks", "--device", "cpu", "--cache", str(tmp_path), "--threads", "1"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["cached"] is False and first["bandwidth"] and first["flops"]["float32"] > 0
    assert main(["peaks", "--device", "cpu", "--cache", str(tmp_path), "--threads", "1"]) == 0
    second = json.loads(capsys.readouterr().out)
    torch.set_num_threads(threads)
    assert second["cached"] is True and second["flops"] == first["flops"]


def test_tf32_switched_on_fails_only_under_the_strict_policy():
    strict_fp32 = {"cuda_matmul_tf32": False, "cudnn_tf32": False, "float32_matmul_precision": "highest"}
    assert reference_checks.judge_precision_flags(strict_fp32, "strict", "while its forward ran") == []
    tf32 = dict(strict_fp32, cuda_matmul_tf32=True)
    [finding] = reference_checks.judge_precision_flags(tf32, "strict", "while its forward ran")
    assert finding["name"] == "precision_flags" and finding["verdict"] == "fail"
    assert "cuda_matmul_tf32" in finding["message"]
    high = dict(strict_fp32, float32_matmul_precision="high")
    assert "float32_matmul_precision=high" in reference_checks.judge_precision_flags(high, "strict", "x")[0]["message"]
    assert reference_checks.judge_precision_flags(tf32, "relaxed", "x") == []
    facts = {"events": [], "tampered": [], "precision_flags": tf32}
    assert "precision_flags" in {f["name"] for f in reference_checks.judge_run(facts, {}, set(), set(), "strict")}
    assert "precision_flags" not in {f["name"] for f in reference_checks.judge_run(facts, {}, set(), set(), "relaxed")}


def test_the_flags_read_back_what_a_candidate_switched():
    from kforge_worker.checks import runtime_checks
    from kforge_worker.common import session

    try:
        session.set_precision("strict")
        assert not reference_checks.judge_precision_flags(runtime_checks.precision_flags(), "strict", "x")
        torch.set_float32_matmul_precision("high")
        assert reference_checks.judge_precision_flags(runtime_checks.precision_flags(), "strict", "x")
    finally:
        session.set_precision("strict")


def test_library_calls_are_the_allowed_operators_the_candidate_dispatched():
    from kforge_worker.checks import guard as guard_module

    g = guard_module.Guard()
    g.allowed = ops.canonical_set(["matmul", "mm", "addmm", "linear"])
    got = {"facts": {"events": [], "tampered": [], "ops_recorded": True,
                     "aten_ops": ["mm", "relu", "zero_"]}}
    assert g.judge(None, 0, {"facts": {}}, got, {})["library_calls"] == sorted(ops.canonical_set(["mm"]))
    got["facts"]["aten_ops"] = ["relu", "zero_"]
    assert g.judge(None, 0, {"facts": {}}, got, {})["library_calls"] == []
    assert "library_calls" not in g.judge(None, 0, {"facts": {}}, got, {"timing": True})


def _scaled_rule_in_float64(e: torch.Tensor, g: torch.Tensor) -> int:
    e64, g64 = e.double(), g.double()
    finite = torch.isfinite(e64)
    tol = compare.tolerance_for(e.dtype)
    rms = float(e64[finite].pow(2).mean().sqrt())
    err = (g64 - e64).abs().masked_fill(~finite, 0)
    return int(((err > tol * e64.abs() + tol * min(1.0, rms)) & finite).sum())


@pytest.mark.parametrize("case", ["finite", "non_finite", "overflowing_squares"])
def test_scaled_check_counts_what_the_rule_written_in_float64_counts(case):
    """The magnitude-scaled rule near its threshold: the count is that of the rule computed directly
    in float64, also where the reference has infinities and NaNs, and where the squares of its
    values overflow float32 (the RMS then comes from the float64 pass)."""
    gen = torch.Generator().manual_seed(5)
    e = torch.randn(8192, generator=gen) * 1e-3
    if case == "overflowing_squares":
        e[100] = 3e20
    tol = compare.tolerance_for(e.dtype)
    rms = float(e.double().pow(2).mean().sqrt())
    threshold = tol * e.double().abs() + tol * min(1.0, rms)
    g = (e.double() + torch.rand(8192, generator=gen).double() * 2 * threshold).float()
    if case == "non_finite":
        e[3], g[3] = float("inf"), float("inf")
        e[4], g[4] = float("nan"), float("nan")
    want = _scaled_rule_in_float64(e, g)
    assert want > 100
    found = calibration.scaled_check(e, g)
    assert found is not None and found.startswith(f"output 0: {want} of 8192 elements")


def test_the_precision_audit_is_skipped_where_its_float64_forward_would_not_fit_the_host(tmp_path, monkeypatch):
    """On the host the float64 forward needs about twice the problem's inputs and peak: where the
    host has less room than that, the audit is skipped with a warning instead of running the
    reference out of memory (which kforge would report as a problem too large for the host)."""
    from kforge_worker.checks import memory_estimate
    from kforge_worker.roles import reference

    source = tmp_path / "problem.py"
    source.write_text("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                      "        return torch.softmax(x, -1)\n"
                      "def get_inputs():\n    return [torch.randn(64, 256)]\n"
                      "def get_init_inputs():\n    return []\n")
    shared = tmp_path / "shared"
    shared.mkdir()
    monkeypatch.setenv("KFORGE_WORKDIR", str(tmp_path))
    ref = reference.ReferenceSession()
    ref.load_problem({"device": "cpu", "shared_dir": str(shared), "problem": str(source), "seed": 3})
    try:
        ref.make_trial({"trial": 0, "seed": 3})
        record = ref.trial(0)
        got = {"outputs": record["outputs"].clone() * (1 + 1e-7)}
        reply = {"stats": {"identical": False}}
        real = memory_estimate.device_memory
        monkeypatch.setattr(memory_estimate, "device_memory",
                            lambda device: {"free_bytes": 4096, "total_bytes": 1 << 34} if device == "cpu" else real(device))
        ref.guard.after_match(ref, 0, record, got, {}, reply)
        assert "precision" not in reply
        [warning] = [f for f in reply["findings"] if f["name"] == "precision"]
        assert warning["verdict"] == "warn" and "was skipped" in warning["message"] and "GiB" in warning["message"]
        record.pop("outputs64")
        monkeypatch.setattr(memory_estimate, "device_memory", real)  # room enough: audited as before
        reply = {"stats": {"identical": False}}
        ref.guard.after_match(ref, 0, record, got, {}, reply)
        assert reply["precision"]["verdict"] == "pass"
    finally:
        ref.reset({})


def test_custom_operators_with_python_kernels_are_named_and_judged():
    """torch runs a custom operator's kernel below the dispatch modes: the recorder names the
    operator with its namespace, and the reference judges it delegation."""
    from kforge_worker.checks.runtime_checks import _op_recorder

    @torch.library.custom_op("kforge_test::rows", mutates_args=())
    def rows(x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, 1)

    seen, x = set(), torch.randn(2, 4)
    with _op_recorder(seen):
        rows(x)
    assert seen == {"kforge_test::rows"}
    facts = {"events": [], "tampered": [], "new_threads": [], "children": [], "plain_tensors": True,
             "output_types": ["torch.Tensor"], "deferred": False, "aliases_inputs": [False],
             "aten_ops": sorted(seen | {"zero_"}), "ops_recorded": True}
    found = [f for f in reference_checks.judge_run(facts, {"plain_tensors": True}, {"softmax"}, ALLOWED)
             if f["name"] == "torch_delegation"]
    assert found and "kforge_test::rows" in found[0]["message"], found
