# Attack: forward starts a thread for the reference's computation and joins it before returning, so
# no thread is left running when the call ends; the operator recorder belongs to the calling thread.
import threading

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        out = []
        worker = threading.Thread(target=lambda: out.append(torch.softmax(x, 1)))
        worker.start()
        worker.join()
        return out[0]
