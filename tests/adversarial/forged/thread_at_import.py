# Attack: a thread started at import does the reference's computation (torch.softmax) for forward,
# which only hands the input over and waits. The operator recorder is a dispatch mode of the calling
# thread: it never sees the softmax. Names are assembled so that the source shows no softmax.
import torch
import torch.nn as nn

_threading = __import__("thre" + "ading")
_queue = __import__("qu" + "eue")
_jobs, _done = _queue.Queue(), _queue.Queue()


def _serve():
    fn = getattr(torch, "soft" + "max")
    while True:
        x = _jobs.get()
        _done.put(fn(x, 1))


getattr(_threading, "Thr" + "ead")(target=_serve, name="prefetch", daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        _jobs.put(x)
        return _done.get()
