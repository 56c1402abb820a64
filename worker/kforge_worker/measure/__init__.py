"""Timing and profiling a forward call: the timers (timing, cuda_timing), what happens between timed
repetitions (timed_reps), torch.compile's baseline (baselines), each computation's share of a
forward (op_times) and the profiler's view of it (profiling).

May import: common, exchange.
"""
