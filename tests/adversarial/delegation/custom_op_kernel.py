# Attack: the reference's computation registered as a custom operator (torch.library) whose kernel is
# Python: the dispatcher runs the kernel below torch's dispatch modes, so the operator recorder sees
# one operator of an unknown name, and none of the torch work inside it.
import torch
import torch.nn as nn

_lib = torch.library.Library("kforge_attack", "DEF")
_lib.define("rows(Tensor x) -> Tensor")
_lib.impl("rows", lambda x: torch.softmax(x, 1), "CPU")


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.ops.kforge_attack.rows(x)
