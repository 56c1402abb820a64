# Attack, spelled plainly: the Python dispatch key switched off in the thread's dispatch state with a
# setter rather than a guard, and switched back on before forward returns.
import torch
import torch.nn as nn

_PYTHON = torch._C.DispatchKey.Python


class ModelNew(nn.Module):
    def forward(self, x):
        torch._C._dispatch_tls_set_dispatch_key_excluded(_PYTHON, True)
        try:
            return torch.softmax(x, 1)
        finally:
            torch._C._dispatch_tls_set_dispatch_key_excluded(_PYTHON, False)
