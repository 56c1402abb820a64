"""State shared by both worker roles: device, thread count, seeding and the per-trial seed rule."""

import os
import random

import torch


def setup(device: str, threads: int) -> None:
    if threads > 0:
        torch.set_num_threads(threads)
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError(f"device {device} requested but torch.cuda.is_available() is False")
        index = torch.device(device).index  # "cuda" alone means the current device
        torch.cuda.set_device(index if index is not None else torch.cuda.current_device())


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % (2**32))
    except ImportError:
        pass


def trial_seed(base_seed: int, trial: int) -> int:
    # Inputs of every trial come from a different seed; weights come from base_seed itself.
    return (base_seed * 1_000_003 + 7919 * (trial + 1)) % (2**31 - 1)


def set_precision(policy: str) -> None:
    """strict: no TF32 anywhere, so fp32 means fp32. relaxed: allow TF32 matmuls and convolutions."""
    allow = policy == "relaxed"
    torch.backends.cuda.matmul.allow_tf32 = allow
    torch.backends.cudnn.allow_tf32 = allow
    torch.set_float32_matmul_precision("high" if allow else "highest")


def private_path(name: str) -> str:
    return os.path.join(os.environ.get("KFORGE_WORKDIR", "."), name)
