import torch

from kforge_worker.checks import sol
from kforge_worker.measure import timed_reps
from kforge_worker.measure.timing import CpuTimer


def _run_block(model, sets, schedule):
    buffers = [t.clone() for t in sets[0]]
    block = timed_reps.Block(buffers, sets, schedule, {"torch.Tensor"})

    def call():
        block.returned[:] = [model(*buffers)]

    CpuTimer().measure(call, len(schedule), before=block.before, after=block.after)
    return block


SETS = [[torch.randn(4, 8)] for _ in range(3)]


def test_each_repetition_gets_its_scheduled_inputs_and_keeps_its_own_outputs():
    block = _run_block(lambda x: x * 2, SETS, [0, 1, 2, 1])
    for rep, k in enumerate([0, 1, 2, 1]):
        assert torch.equal(block.outputs_of(rep), SETS[k][0] * 2)
    facts = block.facts()
    assert (facts["inputs_changed"], facts["new_output_types"], facts["untimed_ms"] > 0) == ([], [], True)


def test_a_block_that_owns_its_sets_lets_each_go_after_its_last_call():
    seen = []
    sets = [list(s) for s in SETS[:2]]
    buffers = [t.clone() for t in sets[0]]
    block = timed_reps.Block(buffers, sets, [0, 1, 1], {"torch.Tensor"}, own_sources=True)

    def call():
        seen.append([s is not None for s in block.sources])
        block.returned[:] = [buffers[0] * 2]

    CpuTimer().measure(call, 3, before=block.before, after=block.after)
    # A block on fresh inputs: the seen set (0) goes after its one call, the fresh set (1) after the last.
    assert seen == [[True, True], [False, True], [False, True]]
    assert block.sources == [None, None]
    assert [torch.equal(block.outputs_of(r), SETS[k][0] * 2) for r, k in enumerate([0, 1, 1])] == [True] * 3
    # Sets kept across blocks (without lean timing) are not the block's to let go.
    shared = [list(s) for s in SETS[:2]]
    _run_block(lambda x: x * 2, shared, [0, 1, 1])
    assert all(s is not None for s in shared)


def test_a_reused_output_buffer_is_still_kept_per_repetition():
    out = torch.empty(4, 8)
    block = _run_block(lambda x: torch.mul(x, 2, out=out), SETS, [2, 0])
    assert torch.equal(block.outputs_of(0), SETS[2][0] * 2)
    assert torch.equal(block.outputs_of(1), SETS[0][0] * 2)


def test_stale_outputs_are_caught_by_any_later_repetition():
    memory = []

    def stale(x):  # computes once, then returns the first answer
        if not memory:
            memory.append(x * 2)
        return memory[0]

    block = _run_block(stale, SETS, [0, 1, 0, 2])
    assert torch.equal(block.outputs_of(0), SETS[0][0] * 2)
    assert not torch.equal(block.outputs_of(1), SETS[1][0] * 2)


def test_inputs_written_by_a_call_are_noted_and_restored_before_the_next():
    seen = []

    def zeroing(x):
        seen.append(x.clone())
        y = x * 2
        x.zero_()
        return y

    block = _run_block(zeroing, SETS, [0, 1])
    assert block.facts()["inputs_changed"] == [0, 1]
    assert torch.equal(seen[1], SETS[1][0])  # the second call saw its own inputs, not zeros


def test_outputs_of_a_type_the_correctness_runs_never_returned_are_noted():
    class Lazy(torch.Tensor):
        pass

    block = _run_block(lambda x: (x * 2).as_subclass(Lazy), SETS, [0, 1])
    assert block.facts()["new_output_types"] == [f"{Lazy.__module__}.{Lazy.__qualname__}"]


def test_same_bits_treats_equal_nans_as_equal():
    a = torch.tensor([1.0, float("nan")])
    assert timed_reps.same_bits(a, a.clone())
    assert not timed_reps.same_bits(a, torch.tensor([1.0, 2.0]))


def test_same_bits_compares_bits_on_either_path():
    """Contiguous CPU tensors are compared as bytes (memcmp), any other as torch.equal of the bits:
    both say the same of every case."""
    x = torch.randn(64, 64)
    for a in (x, x.t(), x.to(torch.float16), torch.arange(100), x[::2]):  # contiguous or strided
        assert timed_reps.same_bits(a, a.clone())
        last = (-1,) * a.dim()
        changed = a.clone()
        changed[last] = changed[last] + 1
        assert not timed_reps.same_bits(a, changed)
    assert not timed_reps.same_bits(torch.tensor([0.0]), torch.tensor([-0.0]))  # equal values, other bits
    assert timed_reps.same_bits(torch.tensor([True, False]), torch.tensor([True, False]))
    assert timed_reps.same_bits(torch.empty(0), torch.empty(0))
    assert not timed_reps.same_bits(torch.zeros(4), torch.zeros(2, 2))


def test_dependent_inputs_finds_the_inputs_an_output_reads():
    def forward(inputs):
        a, b = inputs
        return a * 0 + b.sum()

    a, b = torch.randn(3), torch.randn(3)
    deps = sol.dependent_inputs(forward, [a, b], [torch.randn(3), torch.randn(3)], forward([a, b]))
    assert deps == [False, True]


def test_hard_bound_counts_outputs_and_dependent_inputs_only():
    peaks = {"bandwidth": [{"working_set_bytes": 1 << 20, "bytes_per_s": 1e9}]}
    out = sol.hard_bound([torch.zeros(100), torch.zeros(50)], torch.zeros(10), [False, True], peaks)
    assert out["bytes"] == 4 * (10 + 50) and abs(out["hard_ms"] - 1e3 * 240 / 1e9) < 1e-12


def test_the_work_between_repetitions_runs_on_one_thread_and_the_call_on_all():
    threads = torch.get_num_threads()
    seen = []
    block = timed_reps.Block([SETS[0][0].clone()], SETS, [0, 1], {"torch.Tensor"})
    real_write = timed_reps.write_inputs

    def counting_write(buffers, source):
        seen.append(("swap", torch.get_num_threads()))
        real_write(buffers, source)

    timed_reps.write_inputs = counting_write
    try:
        def call():
            seen.append(("call", torch.get_num_threads()))
            block.returned[:] = [block.buffers[0] * 2]

        CpuTimer().measure(call, 2, before=block.before, after=block.after)
    finally:
        timed_reps.write_inputs = real_write
    assert seen == [("swap", 1), ("call", threads), ("swap", 1), ("call", threads)]
    assert torch.get_num_threads() == threads


def test_the_untimed_work_stays_small_under_two_busy_loops():
    """A 256 KB set swapped, kept and compared on 2 threads of 2 busy cores waited 32-48 ms a
    repetition for the pool's other thread; on one thread it takes about 0.05 ms. 5 ms a repetition
    is a gap of 100x from each side."""
    import subprocess
    import sys

    torch.set_num_threads(2)
    sets = [[torch.randn(64, 1024)] for _ in range(2)]
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        block = _run_block(torch.relu, sets, [0, 1] * 10)
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()
    assert block.facts()["untimed_ms"] / 20 < 5.0, block.facts()
