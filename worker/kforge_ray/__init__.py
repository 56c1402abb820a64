"""kforge's Ray executor, Python side: the driver's bridge to Ray (bridge.py) and the task that
evaluates on a Ray node (task.py). See docs/bench.md#executors."""
