import subprocess

import torch.nn as nn

# A detached child in its own session: it leaves the worker's process group.
subprocess.Popen(["/bin/sh", "-c", "sleep 1000; : kforge_stray_setsid"], start_new_session=True)


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()

    def forward(self, a, b):
        return a - b  # wrong
