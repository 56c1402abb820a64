"""Canonical names of the PyTorch computations a candidate is meant to replace.

Python calls (``torch.nn.functional.softmax``, ``x.softmax()``, ``nn.Softmax``), aten operators seen
at run time (``aten::_softmax``) and names listed in a target's ``allowed_torch_calls`` all map to
one canonical name here, so the static and runtime delegation checks compare like with like.
"""

import functools
import sys
from typing import Dict, Iterable, Optional, Set, Tuple

# Synonyms that do the same computation; every GEMM-like call is one "matmul".
_GROUPS = {
    "matmul": {"matmul", "mm", "bmm", "addmm", "addbmm", "baddbmm", "linear", "einsum", "tensordot", "mv",
               "addmv", "dot", "inner", "chain_matmul", "multi_dot", "bilinear"},
    "conv": {"conv1d", "conv2d", "conv3d", "convolution", "_convolution", "mkldnn_convolution", "conv_transpose1d",
             "conv_transpose2d", "conv_transpose3d", "convolution_overrideable", "cudnn_convolution"},
    "softmax": {"softmax", "_softmax", "softmin"},
    "log_softmax": {"log_softmax", "_log_softmax"},
    "layer_norm": {"layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm"},
    "batch_norm": {"batch_norm", "native_batch_norm", "_native_batch_norm_legit", "_native_batch_norm_legit_no_training"},
    "group_norm": {"group_norm", "native_group_norm"},
    "instance_norm": {"instance_norm"},
    "attention": {"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
                  "_scaled_dot_product_efficient_attention", "multi_head_attention_forward",
                  "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_cudnn_attention",
                  "_scaled_dot_product_attention_math"},
    "max_pool": {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices"},
    "avg_pool": {"avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d"},
    "embedding": {"embedding", "embedding_bag", "_embedding_bag"},
    "sum": {"sum", "nansum"},
    "mean": {"mean", "nanmean"},
    "std": {"std", "std_mean"},
    "var": {"var", "var_mean"},
    "max": {"max", "amax"},
    "min": {"min", "amin"},
    "norm": {"norm", "linalg_vector_norm", "vector_norm", "frobenius_norm"},
    "clamp": {"clamp", "clamp_min", "clamp_max", "clip"},
}
# Single computations named as themselves.
_SINGLE = {
    "relu", "relu6", "gelu", "sigmoid", "tanh", "silu", "mish", "elu", "selu", "celu", "leaky_relu", "hardtanh",
    "hardswish", "hardsigmoid", "softplus", "softsign", "logsigmoid", "threshold", "prelu", "glu",
    "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "pow", "abs", "erf", "erfc",
    "sin", "cos", "reciprocal", "sign",
    "prod", "cumsum", "cumprod", "logsumexp", "argmax", "argmin", "topk", "sort", "median",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "kl_div", "huber_loss",
    "binary_cross_entropy", "cosine_similarity", "pairwise_distance", "triplet_margin_loss", "hinge_embedding_loss",
    "normalize", "dropout", "pixel_shuffle", "interpolate", "upsample_bilinear2d", "upsample_nearest2d",
    "where", "masked_fill", "scatter", "gather", "index_select", "tril", "triu", "diag",
}
# Elementwise arithmetic: glue in most candidates; the main computation only when the reference has
# nothing else.
ARITHMETIC = {"add", "sub", "mul", "div", "neg", "true_divide", "rsub", "addcmul", "addcdiv", "square", "maximum",
              "minimum", "fmod", "remainder", "floor_divide"}

_CANONICAL = {name: group for group, names in _GROUPS.items() for name in names}
_CANONICAL.update({name: name for name in _SINGLE | ARITHMETIC})

# The work kinds a target may allow as library calls ([checks] allowed_torch_calls), in words.
LIBRARY_KINDS = {"matmul": "GEMM", "conv": "convolution"}
# Reference computations whose work is of a library kind: attention is two GEMMs.
_WORK_OF_KIND = {"attention": "matmul"}
# An allowed library kind's FLOPs may exceed the reference's by this factor (tiles padded to a block).
FLOP_MARGIN = 1.25
# Operators torch tags pointwise that only move or copy data: glue, not compute.
_DATA_MOVEMENT = {"clone", "copy", "_to_copy", "_copy_from", "_copy_from_and_resize", "fill", "zero", "lift_fresh",
                  "alias", "detach", "positive", "resolve_conj", "resolve_neg", "_conj"}

# torch.nn module classes and the computation their forward performs.
MODULES = {
    "Linear": "matmul", "Bilinear": "matmul", "LazyLinear": "matmul",
    "Conv1d": "conv", "Conv2d": "conv", "Conv3d": "conv", "ConvTranspose1d": "conv", "ConvTranspose2d": "conv",
    "ConvTranspose3d": "conv",
    "ReLU": "relu", "ReLU6": "relu6", "GELU": "gelu", "Sigmoid": "sigmoid", "Tanh": "tanh", "SiLU": "silu",
    "Mish": "mish", "ELU": "elu", "SELU": "selu", "LeakyReLU": "leaky_relu", "Hardtanh": "hardtanh",
    "Hardswish": "hardswish", "Softplus": "softplus", "Softmax": "softmax", "LogSoftmax": "log_softmax",
    "LayerNorm": "layer_norm", "RMSNorm": "layer_norm", "BatchNorm1d": "batch_norm", "BatchNorm2d": "batch_norm",
    "BatchNorm3d": "batch_norm", "GroupNorm": "group_norm", "InstanceNorm1d": "instance_norm",
    "InstanceNorm2d": "instance_norm", "InstanceNorm3d": "instance_norm",
    "MaxPool1d": "max_pool", "MaxPool2d": "max_pool", "MaxPool3d": "max_pool", "AvgPool1d": "avg_pool",
    "AvgPool2d": "avg_pool", "AvgPool3d": "avg_pool", "AdaptiveAvgPool2d": "avg_pool",
    "Embedding": "embedding", "EmbeddingBag": "embedding", "MultiheadAttention": "attention",
    "CrossEntropyLoss": "cross_entropy", "MSELoss": "mse_loss", "Dropout": "dropout",
}


def canonical(name: str) -> Optional[str]:
    """The canonical computation for a function, method or aten name; None for glue (views, copies)."""
    base = name.split(".")[-1]
    if base.startswith("__") and base.endswith("__"):
        base = {"__matmul__": "matmul", "__rmatmul__": "matmul", "__add__": "add", "__mul__": "mul",
                "__sub__": "sub", "__truediv__": "div"}.get(base, "")
    if base.endswith("_") and not base.startswith("_"):
        base = base[:-1]  # in-place variant: relu_ is relu
    if base in _CANONICAL:
        return _CANONICAL[base]
    stripped = base.lstrip("_")
    if stripped in _CANONICAL:
        return _CANONICAL[stripped]
    return base if _tagged_compute(base) else None


@functools.lru_cache(maxsize=None)
def _tagged_compute(name: str) -> bool:
    """Whether torch tags an aten operator of this name pointwise or a reduction: computation under any
    name (nansum, gt, lerp, ...). Known where torch is loaded (the reference and candidate processes);
    the static checks' process has no torch and knows the names above only."""
    torch = sys.modules.get("torch")
    if torch is None or name in _DATA_MOVEMENT or name.lstrip("_") in _DATA_MOVEMENT:
        return False
    try:
        packet = getattr(torch.ops.aten, name)
        overloads = [getattr(packet, o) for o in packet.overloads()]
    except Exception:
        return False
    work = {torch.Tag.pointwise, torch.Tag.reduction}
    return any(work & set(op.tags) for op in overloads)


def canonical_set(names: Iterable[str]) -> Set[str]:
    out = set()
    for n in names:
        c = canonical(n)
        if c:
            out.add(c)
    return out


def main_computation(reference_ops: Set[str]) -> Set[str]:
    """What the reference spends its work on: arithmetic counts only when there is nothing else."""
    heavy = {op for op in reference_ops if op not in ARITHMETIC}
    return heavy or set(reference_ops)


def library_kinds(reference_ops: Set[str]) -> Set[str]:
    """The library kinds (LIBRARY_KINDS) of the work the reference does: its GEMMs and convolutions."""
    return {_WORK_OF_KIND.get(op, op) for op in reference_ops} & set(LIBRARY_KINDS)


def flop_kind(aten_name: str) -> Optional[str]:
    """The library kind an aten operator's FLOPs count towards (matmul for attention's), else None."""
    op = canonical(aten_name)
    op = _WORK_OF_KIND.get(op, op)
    return op if op in LIBRARY_KINDS else None


def delegation(reference_ops: Set[str], candidate_ops: Set[str], allowed: Set[str],
               reference_flops: Optional[Dict[str, float]] = None,
               candidate_flops: Optional[Dict[str, float]] = None) -> Optional[Tuple[str, str]]:
    """(verdict, why) when the candidate's torch calls delegate the reference's work, else None.

    Judged by work, not names: an allowed library call is allowed only for work of a kind the
    reference does with a library call (a GEMM, a convolution: library_kinds), and with both FLOP
    counts given, for at most FLOP_MARGIN times the reference's FLOPs of that kind. Any other torch
    computation is the candidate's to do: elementwise arithmetic excepted (glue in most candidates),
    unless it is the reference's whole computation. A reference made only of elementwise arithmetic
    gives a warning, not a failure: delegating it cannot buy a speedup over eager.
    """
    main = main_computation(reference_ops)
    if not main:
        return None
    verdict = "warn" if main <= ARITHMETIC else "fail"
    if main <= candidate_ops:
        return verdict, (f"the candidate hands the whole computation ({', '.join(sorted(main))}) to PyTorch, "
                         f"which is what it should replace")
    forbidden = (main & candidate_ops) - allowed
    if forbidden:
        return verdict, (f"the candidate calls PyTorch for {', '.join(sorted(forbidden))}, the reference's own "
                         f"computation (allowed by this target: {', '.join(sorted(allowed)) or 'none'})")
    kinds = library_kinds(reference_ops)
    for op in sorted(candidate_ops & allowed & (set(LIBRARY_KINDS) - kinds)):
        kind = LIBRARY_KINDS[op]
        theirs = " and ".join(f"{LIBRARY_KINDS[k]}s" for k in sorted(kinds)) or "none"
        return "fail", (f"delegation: the candidate's {op} library call does {kind} work, of a kind the reference does "
                        f"not do with a library call (it computes no {kind}); the target's library calls are allowed "
                        f"for the reference's own GEMMs and convolutions only (here: {theirs})")
    if reference_flops is not None and candidate_flops is not None:
        for op in sorted(candidate_ops & allowed & kinds):
            mine, theirs = float(candidate_flops.get(op, 0)), float(reference_flops.get(op, 0))
            if theirs > 0 and mine > FLOP_MARGIN * theirs:
                return "fail", (f"delegation: the candidate's {LIBRARY_KINDS[op]} library calls do {mine:.3g} FLOPs, "
                                f"{mine / theirs:.1f}x the reference's {theirs:.3g} {LIBRARY_KINDS[op]} FLOPs (at most "
                                f"{FLOP_MARGIN:g}x): the rest is other work handed to the library")
    own = sorted(op for op in candidate_ops - allowed - ARITHMETIC if op not in main)
    if own:
        return "fail", (f"delegation: the candidate calls PyTorch for {', '.join(own)}, computation it must do "
                        f"itself (the library calls this target allows: "
                        f"{', '.join(sorted(allowed)) or 'none'}, for work of the kind the reference does with them)")
    return None
