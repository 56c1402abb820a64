"""The trusted side measures what a candidate's worker does between timed repetitions (the bound of
its untimed_ms: src/eval/clock_floor.h)."""

import torch

from kforge_worker.roles import reference


def test_the_untimed_work_between_repetitions_is_measured_on_the_trusted_side():
    x = torch.randn(256, 1024)
    ms = reference.untimed_cost_ms([x], [[torch.randn(256, 1024)], [torch.randn(256, 1024)]], torch.relu(x), "cpu")
    assert 0 < ms < 1000
    assert reference.untimed_cost_ms([x], [[x]], [x, x], "cpu") > 0
