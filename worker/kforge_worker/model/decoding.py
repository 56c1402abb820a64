"""Decoding a causal language model end to end: a prompt's prefill with the KV cache, then single-token
steps that each read and grow it. The steps are teacher-forced (tokens drawn in advance, not the
model's argmax), so that the original and a patched model see the same tokens and their logits can
be compared step by step even where a kernel's rounding would pick another token."""

import inspect
import time
from typing import Callable, Optional

import torch


def plain(output):
    """A forward's output as tensors: a transformers ModelOutput becomes the tuple of its tensors
    (the logits, without a cache), so it saves, loads and compares like any output."""
    if hasattr(output, "to_tuple") and not isinstance(output, (tuple, list, torch.Tensor)):
        return tuple(v for v in output.to_tuple() if isinstance(v, torch.Tensor))
    return output


def cache_argument(model: torch.nn.Module) -> Optional[str]:
    """The forward's name for the KV cache (``cache`` from transformers 5.x, ``past_key_values``
    before), or None when the model takes none."""
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return None
    for name in ("cache", "past_key_values"):
        if name in params:
            return name
    return None


def settings(module, model: torch.nn.Module, inputs: list) -> Optional[dict]:
    """{"steps", "cache_argument", "batch", "prompt"} when the model file asks for decoding
    (``decode_steps``) of a model that takes a cache and a prompt of token ids; None otherwise."""
    steps = getattr(module, "decode_steps", None)
    arg = cache_argument(model)
    if not isinstance(steps, int) or steps < 1 or arg is None or not inputs:
        return None
    prompt = inputs[0]
    if not isinstance(prompt, torch.Tensor) or prompt.dim() != 2 or prompt.dtype not in (torch.int64, torch.int32):
        return None
    return {"steps": steps, "cache_argument": arg, "batch": int(prompt.shape[0]), "prompt": int(prompt.shape[1])}


def tokens(model: torch.nn.Module, batch: int, steps: int, seed: int, device) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    vocab = int(getattr(getattr(model, "config", None), "vocab_size", 2))
    return torch.randint(0, vocab, (batch, steps), generator=generator).to(device)


def _cache_of(output):
    for name in ("cache", "past_key_values"):
        value = getattr(output, name, None)
        if value is not None:
            return value
    raise RuntimeError("the model returned no KV cache with use_cache=True")


def decode(model: torch.nn.Module, prompt: torch.Tensor, steps: torch.Tensor, cache_argument: str,
           sync: Callable[[], None] = lambda: None) -> tuple:
    """(milliseconds of the single-token steps, their logits [batch, steps, vocab]); the prefill
    that fills the cache is not timed."""
    with torch.no_grad():
        out = model(input_ids=prompt, use_cache=True)
        cache = _cache_of(out)
        logits = []
        sync()
        start = time.perf_counter()
        for i in range(steps.shape[1]):
            out = model(input_ids=steps[:, i:i + 1], use_cache=True, **{cache_argument: cache})
            cache = _cache_of(out)
            logits.append(out.logits[:, -1])
        sync()
        ms = (time.perf_counter() - start) * 1e3
    return ms, torch.stack(logits, dim=1)
