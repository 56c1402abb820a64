# Attack, spelled plainly: the Python dispatch key excluded around the reference's computation with
# torch._C's public guard: torch's dispatch modes (kforge's operator recorder) are skipped.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        with torch._C.ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):
            return torch.softmax(x, 1)
