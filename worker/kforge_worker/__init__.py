"""kforge's evaluation worker: loads a KernelBench-format problem and a candidate, runs, checks and times them.

Run as ``python -m kforge_worker serve --role reference|candidate``; kforge (C++) drives it over a
private command channel (see docs/worker-protocol.md). The libraries candidates build their kernels
with are a package of their own, kforge_kernels; the modules here named after them only keep older
candidates' imports working.
"""
