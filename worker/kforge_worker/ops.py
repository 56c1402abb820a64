"""Canonical names of the PyTorch computations a candidate is meant to replace.

Python calls (``torch.nn.functional.softmax``, ``x.softmax()``, ``nn.Softmax``), aten operators seen
at run time (``aten::_softmax``) and names listed in a target's ``allowed_torch_calls`` all map to
one canonical name here, so the static and runtime delegation checks compare like with like.
"""

from typing import Iterable, Optional, Set, Tuple

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
                  "_scaled_dot_product_efficient_attention", "multi_head_attention_forward"},
    "max_pool": {"max_pool1d", "max_pool2d", "max_pool3d", "max_pool2d_with_indices", "max_pool3d_with_indices"},
    "avg_pool": {"avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool2d", "_adaptive_avg_pool2d"},
    "embedding": {"embedding", "embedding_bag", "_embedding_bag"},
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
    "sum", "mean", "prod", "cumsum", "cumprod", "logsumexp", "argmax", "argmin", "topk", "sort", "median",
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
    return _CANONICAL.get(stripped)


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


def delegation(reference_ops: Set[str], candidate_ops: Set[str], allowed: Set[str]) -> Optional[Tuple[str, str]]:
    """(verdict, why) when the candidate's torch calls delegate the reference's work, else None.

    A reference made only of elementwise arithmetic gives a warning, not a failure: such glue is
    everywhere in honest candidates, and delegating it cannot buy a speedup over eager.
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
    return None
