"""tensors.digest's ten sums in one read of the bytes, on an NVIDIA GPU.

tensors.digest takes a tensor's bytes as the rows of an int8 matrix X (ROW bytes a row), multiplies
X by a fixed int8 weight matrix W (torch._int_mm) and sums: the eight column sums of X @ W and two
of them weighted by row number. cuBLASLt runs that product at 1.6 TB/s on an H100 (W has eight
columns, a shape it is not made for), and its first call in a process costs its setup. This kernel
reads each 16 bytes once and computes the same sums with dp4a (four int8 products at a time), so it
runs at the memory's speed. The sums are wrapping int64 sums of exact integer products, so they do
not depend on the order of the additions: the result is bit for bit the one the operator path gives
(tested on the GPU against it, worker/tests/test_device_digest.py).

For a 16-byte unit at byte k = 16 q of its row (bytes b = 0..15), W's columns give:
- column 0 (ones): S0 = sum of the bytes;
- column 1 (k % 128 - 64): (16 (q % 8) - 64) S0 + S1, with S1 = sum of b times byte b;
- column 2 (k // 128 % 128 - 64): ((q / 8) % 128 - 64) S0 (constant over the unit);
- columns 3-7 (fixed pseudo-random bytes): dp4a against W's own bytes, held in shared memory.
Bytes past the tensor's end count as zeros, as the operator path pads them.

The module is built in the process that digests (worker_kernels); where it cannot run there, the
operator path digests.
"""

from typing import Optional

import torch

from kforge_worker.exchange import worker_kernels

ROW = 4096  # bytes per row: tensors._DIGEST_ROW
TABLE_COLUMNS = 5  # W's columns 3-7, read from a table

SOURCE = worker_kernels.BLOCK_REDUCE + r"""
#define ROW_UNITS 256  /* 16-byte units per 4096-byte row */

// S1's weights: byte b of a unit times b.
__constant__ int kPositions[4] = {0x03020100, 0x07060504, 0x0B0A0908, 0x0F0E0D0C};

// table: W's columns 3-7, column-major (5 x 4096 int8, as 5 x 1024 ints). sums: the ten sums.
// copy: null, or where the bytes are copied as they are read. bytes, copy and table are 16-byte aligned.
extern "C" __global__ void digest_bytes(const signed char* bytes, long long n, const signed char* table,
                                        unsigned long long* sums, signed char* copy) {
  const int4* data = (const int4*)bytes;
  __shared__ int4 w[5 * ROW_UNITS];
  for (int i = threadIdx.x; i < 5 * ROW_UNITS; i += blockDim.x) w[i] = ((const int4*)table)[i];
  __syncthreads();
  u64 acc[10];
#pragma unroll
  for (int j = 0; j < 10; ++j) acc[j] = 0ull;
  long long units = (n + 15) / 16;
  long long full = n / 16;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long u = (long long)blockIdx.x * blockDim.x + threadIdx.x; u < units; u += stride) {
    int4 x;
    if (u < full) {
      x = data[u];
      if (copy) ((int4*)copy)[u] = x;
    } else {  // the last, partial unit: the bytes past the end are zeros
      const signed char* last = bytes + u * 16;
      int words[4] = {0, 0, 0, 0};
      for (int b = 0; b < (int)(n - u * 16); ++b) {
        words[b >> 2] |= ((int)(unsigned char)last[b]) << (8 * (b & 3));
        if (copy) copy[u * 16 + b] = last[b];
      }
      x = make_int4(words[0], words[1], words[2], words[3]);
    }
    int q = (int)(u % ROW_UNITS);
    u64 row = (u64)(u / ROW_UNITS) + 1ull;
    int s0 = __dp4a(x.x, 0x01010101, __dp4a(x.y, 0x01010101, __dp4a(x.z, 0x01010101, __dp4a(x.w, 0x01010101, 0))));
    int s1 = __dp4a(x.x, kPositions[0], __dp4a(x.y, kPositions[1], __dp4a(x.z, kPositions[2], __dp4a(x.w, kPositions[3], 0))));
    int p[8];
    p[0] = s0;
    p[1] = (16 * (q % 8) - 64) * s0 + s1;
    p[2] = ((q / 8) % 128 - 64) * s0;
#pragma unroll
    for (int j = 0; j < 5; ++j) {
      int4 c = w[j * ROW_UNITS + q];
      p[3 + j] = __dp4a(x.x, c.x, __dp4a(x.y, c.y, __dp4a(x.z, c.z, __dp4a(x.w, c.w, 0))));
    }
#pragma unroll
    for (int j = 0; j < 8; ++j) acc[j] += (u64)(long long)p[j];
    acc[8] += row * (u64)(long long)p[0];
    acc[9] += row * (u64)(long long)p[1];
  }
#pragma unroll
  for (int j = 0; j < 10; ++j) block_sum_u64(acc[j], sums + j);
}
"""

BLOCK = 256
BLOCKS_PER_SM = 8

_kernels = worker_kernels.WorkerModule(SOURCE, "kforge_device_digest")
_tables: dict = {}  # device -> W's columns 3-7 as the kernel reads them


def sums(flat: torch.Tensor, weights: torch.Tensor, copy_to: Optional[torch.Tensor] = None) -> Optional[list]:
    """The ten sums of tensors.digest for ``flat`` (contiguous int8 bytes on a CUDA device, 16-byte
    aligned) with the weight matrix ``weights`` (ROW x 8), or None where the kernel cannot run here.
    With ``copy_to`` (as many contiguous bytes on the same device, 16-byte aligned) the bytes are
    copied there in the same read: a copy that digests what it copies costs what the copy alone does
    (a digest before it read the bytes once more). Where None is returned nothing was copied."""
    if not flat.is_cuda or flat.data_ptr() % 16 or not _kernels.usable(flat.device):
        return None
    if copy_to is not None and (copy_to.device != flat.device or copy_to.data_ptr() % 16
                                or copy_to.numel() * copy_to.element_size() != flat.numel()
                                or not copy_to.is_contiguous()):
        return None
    n = flat.numel()
    if n == 0:
        return [0] * 10
    out = torch.zeros(10, dtype=torch.int64, device=flat.device)
    sms = torch.cuda.get_device_properties(flat.device).multi_processor_count
    grid = max(1, min((n + 16 * BLOCK - 1) // (16 * BLOCK), sms * BLOCKS_PER_SM))
    copy = copy_to.data_ptr() if copy_to is not None else 0  # an address (0: none), as the kernel takes it
    if not _kernels.launch("digest_bytes", flat.device, grid, BLOCK, (flat, n, _table(weights), out, copy)):
        return None
    return [int(v) for v in out.tolist()]


def _table(weights: torch.Tensor) -> torch.Tensor:
    key = str(weights.device)
    if key not in _tables:
        # Column j's ROW bytes in order: the int4 the kernel reads for unit q holds bytes 16 q .. 16 q + 15.
        _tables[key] = weights[:, 3:3 + TABLE_COLUMNS].t().contiguous()
    return _tables[key]


def unavailable_reason() -> Optional[str]:
    return _kernels.unavailable
