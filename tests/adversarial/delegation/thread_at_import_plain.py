# Attack, spelled plainly: a thread started at import does the reference's computation for forward,
# which only hands the input over and waits. Threads at import are a static warning only (nothing is
# timed yet), so the runtime must see the thread still running while forward runs.
import queue
import threading

import torch
import torch.nn as nn

_jobs, _done = queue.Queue(), queue.Queue()


def _serve():
    while True:
        x = _jobs.get()
        _done.put(torch.softmax(x, 1))


threading.Thread(target=_serve, name="prefetch", daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        _jobs.put(x)
        return _done.get()
