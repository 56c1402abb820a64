"""Attack (cuda target): predict every trial's inputs from the seed the worker set before ModelNew()
was built (torch.initial_seed()), replaying kforge's per-trial seed rule on the GPU's generator
(Philox, as the reference draws inputs on the cuda device), and answer from a table made at
construction with the candidate's own CUDA ReLU. Nothing is spelled as a cache (no subscript, no
`in`, no dict lookup), so the static checks see a loop comparing floats.

Only the prediction is the attack: the table's answers come from a CUDA kernel of its own, and the
lookup returns a copy (data movement, not computation). Must be stopped by: `mismatch` (incorrect:
trial inputs come from a secret the candidate never sees, so the lookup misses and the zeros it falls
back to are wrong). CPU original: tests/adversarial/forged/.
"""
import torch
import torch.nn as nn

from kforge_kernels import cuda

SRC = r"""
extern "C" __global__ void relu(const float* __restrict__ x, float* __restrict__ y, long long n) {
    long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""
_mod = cuda.compile(SRC)
ROWS, COLS = 64, 1024
TRIALS = list(range(0, 40)) + list(range(1000, 1016)) + list(range(2000, 2008)) + list(range(10_000, 10_003))


def _replayed_seed(base, trial):
    return (base * 1_000_003 + 7919 * (trial + 1)) % (2**31 - 1)


def _relu(x):
    out = torch.empty_like(x)
    n = x.numel()
    _mod.relu(grid=(n + 255) // 256, block=256, args=(x, out, n))
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        base = torch.initial_seed()
        self.pairs = []
        for trial in TRIALS:
            torch.manual_seed(_replayed_seed(base, trial))
            x = torch.randn(ROWS, COLS, device="cuda")
            self.pairs.append((float(x[0, 0]), float(x[-1, -1]), _relu(x)))
        torch.manual_seed(base)

    def forward(self, x):
        first, last = float(x[0, 0]), float(x[-1, -1])
        for a, b, answer in self.pairs:
            if a == first and b == last:
                return answer.clone()  # a copy: as fast as a ReLU, so the speed looks plausible
        return torch.zeros_like(x)
