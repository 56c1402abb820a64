"""CUDA kernels the worker builds for its own checks (device_compare, device_digest): each module
is built with kforge_kernels.cuda (NVRTC) for the device's architecture on first use, once per
process. Whatever stops it (no NVRTC in a ROCm build, an architecture NVRTC does not know, a driver
that cannot load or launch it) is kept as the reason, and the callers take their operator path."""

import threading
from typing import Optional

import torch

# A block's reduction of each thread's v by op, thread 0 getting the result: each warp's shuffles,
# then warp 0's over the warps' results. Every thread of the block must call it (it synchronises).
BLOCK_REDUCE = r"""
typedef unsigned long long u64;

struct FloatMax { __device__ float operator()(float a, float b) const { return fmaxf(a, b); } };
struct Sum { template <typename T> __device__ T operator()(T a, T b) const { return a + b; } };

template <typename T, typename Op>
__device__ __forceinline__ T block_reduce(T v, T identity, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  __shared__ T part[32];
  int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  __syncthreads();
  if (lane == 0) part[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < (blockDim.x >> 5) ? part[lane] : identity;
    for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  }
  return v;
}

__device__ __forceinline__ void block_sum_u64(u64 v, u64* out) {
  v = block_reduce(v, 0ull, Sum());
  if (threadIdx.x == 0 && v) atomicAdd(out, v);
}
"""


class WorkerModule:
    def __init__(self, source: str, name: str):
        self.source = source
        self.name = name
        self.unavailable: Optional[str] = None  # why it cannot be used in this process, once known
        self._module = None
        self._lock = threading.Lock()

    def usable(self, device: torch.device) -> bool:
        return torch.version.cuda is not None and self.unavailable is None and self._built(device) is not None

    def launch(self, kernel: str, device: torch.device, grid: int, block: int, args: tuple) -> bool:
        """Launches ``kernel`` on the current stream; False (and the reason kept) where it cannot run here."""
        module = self._built(device)
        if module is None:
            return False
        with torch.cuda.device(device):
            try:
                module.kernel(kernel)(grid, block, args)
            except Exception as exc:  # the driver could not load the module: not for this process
                self.unavailable = f"{type(exc).__name__}: {exc}"[:500]
                return False
        return True

    def _built(self, device: torch.device):
        if self._module is not None or self.unavailable is not None:
            return self._module
        with self._lock:
            if self._module is None and self.unavailable is None:
                try:
                    from kforge_kernels import cuda
                    major, minor = torch.cuda.get_device_capability(device)
                    self._module = cuda.compile(self.source, name=self.name, arch_override=f"sm_{major}{minor}")
                except Exception as exc:  # no NVRTC (a ROCm build), an architecture NVRTC does not know
                    self.unavailable = f"{type(exc).__name__}: {exc}"[:500]
        return self._module
