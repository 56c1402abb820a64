"""Cutting a model into fusable regions: which modules become problems, what kind each is, which
neighbours fuse (a GEMM or convolution with the elementwise module that only it feeds), and which
regions are the same problem (same pattern, same shapes) called more than once.

A region is always one module, or two modules where the first feeds only the second, because that
is what can be swapped back into the model (module substitution: the first module becomes the
region's kernel, the second an identity)."""

import hashlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import torch

from kforge_worker.model.capture import Capture

VIEWS = {"view", "reshape", "_unsafe_view", "transpose", "permute", "t", "contiguous", "expand", "split", "getitem",
         "slice", "select", "unsqueeze", "squeeze", "clone", "alias", "detach", "flatten", "unflatten", "chunk",
         "split_with_sizes", "unbind", "size", "sym_size", "dropout", "lift_fresh_copy", "to", "_to_copy",
         "native_dropout", "empty_like", "zeros_like", "ones_like", "copy_"}
GEMMS = {"linear", "addmm", "mm", "matmul", "bmm", "baddbmm", "addbmm", "einsum"}
CONVS = {"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d", "conv_transpose2d",
         "conv_transpose3d"}
NORMS = {"layer_norm", "native_layer_norm", "group_norm", "native_group_norm", "batch_norm", "_native_batch_norm_legit_no_training",
         "native_batch_norm", "rms_norm", "_fused_rms_norm", "instance_norm", "_batch_norm_impl_index", "cudnn_batch_norm"}
ATTENTION_HINTS = {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                   "_scaled_dot_product_efficient_attention", "_scaled_dot_product_attention_math",
                   "_scaled_dot_product_flash_attention_for_cpu"}
REDUCTIONS = {"softmax", "_softmax", "log_softmax", "_log_softmax", "sum", "mean", "amax", "max", "min", "var", "std",
              "logsumexp", "cumsum", "norm", "linalg_vector_norm", "argmax", "prod"}
# Attributes that do not change what a module computes: a decoder layer's index into the KV cache
# (the 16 attentions of a Llama are one problem).
NOT_THE_COMPUTATION = {"layer_idx"}
SKIPPED_MODULES = (torch.nn.Dropout, torch.nn.Identity, torch.nn.Embedding)


def classify(ops: List[str]) -> str:
    """attention | gemm | mlp | conv | norm | rotary | elementwise | reduction | composite | none."""
    names = {o.rstrip("_") if o.endswith("_") and not o.startswith("_") else o for o in ops}
    compute = names - VIEWS
    if not compute:
        return "none"
    gemm, conv, norm, red = compute & GEMMS, compute & CONVS, compute & NORMS, compute & REDUCTIONS
    if "rsqrt" in compute and compute & {"mean", "pow"}:
        # RMSNorm written out (x * rsqrt(mean(x^2) + eps)), as Hugging Face decoders have it.
        norm, red = norm | {"rms_norm"}, red - {"mean", "sum"}
    embedding = compute & {"embedding", "embedding_bag"}
    # Attention: a softmax between GEMMs, or a mask filled in between them (ReLU attention,
    # KernelBench's 50_ReLUSelfAttention).
    scores = {"softmax", "_softmax", "masked_fill"} & compute
    if (compute & ATTENTION_HINTS or (scores and len(gemm) >= 2)) and not (norm or conv or embedding):
        return "attention"
    if embedding:
        return "composite"
    if conv and not gemm and not norm:
        return "conv"
    if {"cos", "sin"} <= compute and not conv and not norm and not red:
        return "rotary"  # rotary position embeddings: positions times frequencies, their cosines and sines
    if gemm and not conv and not norm and not red:
        # One GEMM; or several with elementwise operators between them (a gated MLP: SiLU(x W1) * x W3, then W2).
        return "gemm" if len([o for o in ops if o in GEMMS]) == 1 else "mlp"
    if norm and not gemm and not conv:
        return "norm"
    if not gemm and not conv and not norm and not red:
        return "elementwise"
    if red and not gemm and not conv and not norm:
        return "reduction"
    return "composite"


def is_builtin(module: torch.nn.Module) -> bool:
    return type(module).__module__.startswith("torch.nn.")


def is_container(module: torch.nn.Module) -> bool:
    return isinstance(module, (torch.nn.ModuleDict, torch.nn.ModuleList)) or (
        isinstance(module, torch.nn.Sequential) and len(module) > 1)


@dataclass
class Region:
    paths: List[str]            # one module, or [first, second] of a fused chain
    kind: str
    ops: List[str]
    calls: List[dict] = field(default_factory=list)  # recorded by the profiler: per call, the inputs' specs


def select(model: torch.nn.Module, captured: Capture, order: List[str]) -> List[Region]:
    """The regions, top-down: a module whose operators form one fusable pattern is taken whole; the
    top, containers and modules that mix patterns are cut further. ``order``: module paths in the
    order they first ran (the profiler's), so that chains join neighbours."""
    modules = dict(model.named_modules())
    chosen: List[Region] = []

    def visit(path: str, module: torch.nn.Module) -> None:
        kind = classify(captured.ops_within(path))
        # The model itself is one region where its own forward computes (not only its submodules) and
        # everything forms one pattern: a KernelBench attention block written out in its forward
        # (43_MinGPTCausalAttention) would otherwise leave its matmuls and softmax to no region.
        whole = not path and classify(captured.ops.get("", [])) != "none"
        if (path or whole) and not is_container(module) and kind != "composite":
            if kind != "none" and not isinstance(module, SKIPPED_MODULES):
                chosen.append(Region([path], kind, captured.ops_within(path)))
            return
        for name, child in module.named_children():
            visit(f"{path}.{name}" if path else name, child)

    visit("", model)
    rank = {"": -1, **{p: i for i, p in enumerate(order)}}  # the model itself runs first
    chosen = [r for r in chosen if r.paths[0] in rank]  # modules that never ran are not regions
    chosen.sort(key=lambda r: rank[r.paths[0]])
    # Fuse a GEMM, convolution or normalisation with the elementwise region right after it when the
    # graph shows that it feeds only that one.
    fused: List[Region] = []
    for region in chosen:
        prev = fused[-1] if fused else None
        if (prev is not None and len(prev.paths) == 1 and prev.kind in ("gemm", "conv", "norm")
                and region.kind == "elementwise"
                and captured.feeds_only(prev.paths[0], region.paths[0])):
            fused[-1] = Region(prev.paths + region.paths, f"{prev.kind}+epilogue", prev.ops + region.ops)
        else:
            fused.append(region)
    return fused


def module_signature(module: torch.nn.Module) -> str:
    """What makes two modules the same problem: their classes, plain attributes, weight shapes and
    dtypes, and the values of buffers that are not learned (a causal mask)."""
    h = hashlib.sha256()
    params = {id(p) for p in module.parameters()}
    for path, sub in module.named_modules():
        h.update(f"{path}:{type(sub).__module__}.{type(sub).__qualname__}".encode())
        for k, v in sorted(vars(sub).items()):
            if k in NOT_THE_COMPUTATION:
                continue
            if not k.startswith("_") and isinstance(v, (int, float, str, bool, tuple, type(None))):
                h.update(f"{k}={v!r}".encode())
    for name, t in module.state_dict(keep_vars=True).items():
        h.update(f"{name}:{tuple(t.shape)}:{t.dtype}".encode())
        if id(t) not in params and t.numel() <= 1 << 22:
            h.update(t.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                     if t.numel() else b"")
    return h.hexdigest()


def region_key(model: torch.nn.Module, region: Region, call: dict) -> str:
    mods = dict(model.named_modules())
    parts = [module_signature(mods[p]) for p in region.paths]
    return hashlib.sha256(("|".join(parts) + repr(call.get("specs")) + repr(call.get("layout"))).encode()).hexdigest()[:16]
