"""kforge's evaluation worker: loads a KernelBench-format problem and a candidate, runs, checks and times them.

Run as ``python -m kforge_worker serve --role reference|candidate``; kforge (C++) drives it over a
private command channel (see docs/worker-protocol.md). The libraries candidates build their kernels
with are a package of their own, kforge_kernels; the modules here named after them only keep older
candidates' imports working.

Its sub-packages, each importing only those before it (their docstrings say which; worker/tests/
test_package_boundaries.py holds them to it):

    common    errors, the command channel, session state, problems, op names
    backends  what the harness knows about a device kind: its model, peaks and theoretical bounds
    exchange  tensors between the reference and candidate processes, on the host and the device
    measure   timers, timed repetitions, torch.compile baselines, per-op times, profiling
    checks    static, runtime, output, precision and speed-of-light checks; the reference's guard
    builder   the trusted builder and its load_inline header machinery (imports common only)
    roles     the reference and candidate sides of an evaluation, and the one-shot commands
    model     ``kforge model``: a whole model cut into problems and its kernels put back

__main__ (the entry point) may import any of them.
"""
