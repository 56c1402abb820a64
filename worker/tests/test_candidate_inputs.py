"""What the candidate's process sends back about its inputs after a call: only those it changed."""

import types

import torch

from kforge_worker.roles import candidate


def _session(device: str, view):
    return types.SimpleNamespace(device=device, peer=types.SimpleNamespace(get=view))


def test_on_a_gpu_only_the_inputs_a_call_changed_travel_back():
    # The host path on a GPU once sent every input back (a 16 GiB set of KernelBench's
    # 45_Average_Pooling_2D failed at the candidate's file size limit): the digests tell which changed.
    def no_view(name):
        raise AssertionError("a second view of a set is for the CPU")

    inputs = [torch.randn(64), torch.randn(8), 3]
    before = candidate.CandidateSession._pristine(_session("cuda:0", no_view), "inputs_main_0", inputs)
    assert candidate._changed_inputs(inputs, before)["changed"] == {}
    inputs[1].add_(1)
    assert list(candidate._changed_inputs(inputs, before)["changed"]) == [1]


def test_on_the_cpu_the_inputs_are_compared_with_a_second_view_of_the_set():
    inputs = [torch.randn(64)]
    kept = [inputs[0].clone()]
    before = candidate.CandidateSession._pristine(_session("cpu", lambda name: kept), "inputs_main_0", inputs)
    assert before is kept
    inputs[0].mul_(2)
    assert list(candidate._changed_inputs(inputs, before)["changed"]) == [0]


def test_on_a_gpu_the_digests_the_reference_sent_are_not_taken_again(monkeypatch):
    from kforge_worker.exchange import tensors

    inputs = [torch.randn(64), 3, torch.randn(8)]
    sent = [tensors.digest(inputs[0]), None, tensors.digest(inputs[2])]  # make_trial's input_digests, as JSON brings them
    taken = []
    digest = tensors.digest
    monkeypatch.setattr(tensors, "digest", lambda t: taken.append(t) or digest(t))
    before = candidate.CandidateSession._pristine(_session("cuda:0", None), "inputs_main_0", inputs, sent)
    assert taken == []  # nothing read before the call
    assert candidate._changed_inputs(inputs, before)["changed"] == {}
    inputs[2].mul_(-1)
    assert list(candidate._changed_inputs(inputs, before)["changed"]) == [2]
    # Digests that do not line up with the inputs are not used: the candidate takes its own.
    candidate.CandidateSession._pristine(_session("cuda:0", None), "inputs_main_0", inputs, sent[:2])
    assert len(taken) == 2 + 2 + 2
