"""Names for GPU failures, so a verdict says what went wrong rather than "runtime_error".

An illegal address or a device-side assert is sticky: the process's CUDA context is unusable
afterwards. kforge starts fresh worker processes for every evaluation, so the next one is unaffected.
"""

from typing import Optional

# (kind, substrings of the exception text that identify it), most specific first.
_KINDS = [
    ("device_oom", ("CUDA out of memory", "CUDA_ERROR_OUT_OF_MEMORY", "cudaErrorMemoryAllocation")),
    ("illegal_memory_access", ("illegal memory access", "CUDA_ERROR_ILLEGAL_ADDRESS", "misaligned address",
                               "CUDA_ERROR_MISALIGNED_ADDRESS")),
    ("kernel_fault", ("unspecified launch failure", "CUDA_ERROR_LAUNCH_FAILED", "illegal instruction",
                      "CUDA_ERROR_ILLEGAL_INSTRUCTION", "hardware stack error", "CUDA_ERROR_HARDWARE_STACK_ERROR")),
    # torch appends "Compile with TORCH_USE_CUDA_DSA to enable device-side assertions" to every CUDA
    # error, so only the assert's own wording identifies one.
    ("device_assert", ("device-side assert triggered", "CUDA_ERROR_ASSERT")),
    ("launch_failure", ("too many resources requested for launch", "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
                        "invalid configuration argument", "CUDA_ERROR_INVALID_VALUE", "no kernel image is available",
                        "CUDA_ERROR_NO_BINARY_FOR_GPU",
                        "out of resource: shared memory", "OutOfResources", "CudaError: launching ")),
]

_HINTS = {
    "illegal_memory_access": "a kernel read or wrote outside its buffers (or misaligned); the CUDA context is "
                             "now unusable, so the candidate process stops here",
    "device_assert": "a device-side assert fired; the CUDA context is now unusable",
    "kernel_fault": "a kernel faulted (trap, illegal instruction, stack overflow); the CUDA context is now unusable",
    "launch_failure": "the kernel could not be launched: check grid/block sizes (at most 1024 threads per "
                      "block), registers and shared memory (opt in above 48 KB, at most 227 KB on Hopper)",
    "device_oom": "the GPU ran out of memory",
    "cuda_error": "a CUDA call failed; the CUDA context may be unusable",
}


def classify(exc: BaseException) -> Optional[str]:
    """The failure kind of a CUDA-related exception, or None when it is not one."""
    text = f"{type(exc).__name__}: {exc}"
    gpu_related = any(m in text for m in ("CUDA error", "CUDA_ERROR_", "CUDA out of memory", "CUDA driver error")) or \
        type(exc).__name__ in ("CudaError", "OutOfResources", "AcceleratorError")
    if not gpu_related:
        return None
    for kind, needles in _KINDS:
        if any(n in text for n in needles):
            return kind
    return "cuda_error"


def hint(kind: str) -> str:
    return _HINTS.get(kind, "")
