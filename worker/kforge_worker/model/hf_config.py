"""`kforge model --hf-config ARCH --set key=value`: a Hugging Face ``transformers`` architecture built
from its config with random weights (nothing is downloaded), written as an ordinary model file
(``get_model()``, ``get_inputs()``) so that the rest of `kforge model` takes it as it takes any.

``--set`` keys are the config's own (``hidden_size``, ``num_hidden_layers``...) or the inputs':
``batch_size``, ``seq_len`` (the prompt), ``decode_steps`` (single-token steps with a KV cache) and
``dtype`` (bf16 on a GPU, fp32 on the cpu by default). A key that is neither, or an architecture
``transformers`` does not know, is an input error before anything is written."""

import difflib
from pathlib import Path
from typing import Dict, Tuple

from kforge_worker.common.errors import ProblemError

INPUT_DEFAULTS = {"batch_size": 1, "seq_len": 128, "decode_steps": 16}
DTYPES = ("float32", "bfloat16", "float16")


class HfConfigError(ProblemError):
    """The architecture or a --set key is not one transformers knows."""


def _transformers():
    try:
        import transformers
    except ImportError as e:
        raise HfConfigError(f"--hf-config needs the transformers package ({e}); "
                            "scripts/setup.sh installs it, or: pip install transformers") from e
    return transformers


def _close(word: str, options) -> str:
    near = difflib.get_close_matches(word, list(options), n=3)
    return f" (did you mean {', '.join(near)}?)" if near else ""


def default_config(arch: str):
    transformers = _transformers()
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING
    if arch not in CONFIG_MAPPING:
        raise HfConfigError(f"--hf-config {arch}: not an architecture transformers {transformers.__version__} knows"
                            f"{_close(arch, CONFIG_MAPPING.keys())}")
    config = transformers.AutoConfig.for_model(arch)
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    if arch not in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        raise HfConfigError(f"--hf-config {arch}: not a causal language model (AutoModelForCausalLM has none for it); "
                            "kforge model takes decoders from a config")
    return config


def split_sets(arch: str, sets: Dict[str, object], device: str) -> Tuple[dict, dict]:
    """(config keys, input settings with defaults); HfConfigError for a key of neither."""
    config = default_config(arch)
    known = set(config.to_dict()) | {k for k in dir(config) if not k.startswith("_")}
    inputs = dict(INPUT_DEFAULTS, dtype="float32" if device == "cpu" else "bfloat16")
    overrides = {}
    for key, value in sets.items():
        if key in inputs:
            inputs[key] = value
        elif key in known and not callable(getattr(config, key, None)):
            overrides[key] = value
        else:
            raise HfConfigError(f"--set {key}={value}: not a key of {type(config).__name__} nor an input setting "
                                f"({', '.join(inputs)}){_close(key, known | set(inputs))}")
    for key in INPUT_DEFAULTS:
        if not isinstance(inputs[key], int) or inputs[key] < 1:
            raise HfConfigError(f"--set {key}={inputs[key]}: expected a positive integer")
    if inputs["dtype"] not in DTYPES:
        raise HfConfigError(f"--set dtype={inputs['dtype']}: expected one of {', '.join(DTYPES)}")
    try:
        type(config)(**overrides)
    except Exception as e:  # the config's own validation (heads that do not divide the width...)
        raise HfConfigError(f"--hf-config {arch}: {type(config).__name__} refuses these values: {type(e).__name__}: {e}") from e
    return overrides, inputs


_TEMPLATE = '''"""Hugging Face `{arch}` from its config with random weights, written by `kforge model --hf-config`.
get_model() builds it (nothing is downloaded); get_inputs() is a prompt of token ids; the forward
kforge profiles is the prefill (no cache); `decode_steps` single-token steps with a KV cache are
measured end to end beside it."""

import torch
import transformers

ARCH = {arch!r}
CONFIG = {config!r}
batch_size = {batch_size!r}
seq_len = {seq_len!r}
decode_steps = {decode_steps!r}
dtype = {dtype!r}
device = {device!r}  # where get_model() builds it: random init of a large model is quick there


def get_config():
    config = transformers.AutoConfig.for_model(ARCH, **CONFIG)
    config.use_cache = False  # the profiled forward is the prefill; decoding asks for the cache itself
    return config


def get_model():
    torch_dtype = getattr(torch, dtype)
    with torch.device(device if device == "cpu" or torch.cuda.is_available() else "cpu"):
        try:
            model = transformers.AutoModelForCausalLM.from_config(get_config(), dtype=torch_dtype)
        except TypeError:  # transformers before 4.56 calls it torch_dtype
            model = transformers.AutoModelForCausalLM.from_config(get_config(), torch_dtype=torch_dtype)
    return model.to(torch_dtype)


def get_inputs():
    return [torch.randint(0, get_config().vocab_size, (batch_size, seq_len))]
'''


def write(arch: str, sets: Dict[str, object], device: str, path: Path) -> Path:
    overrides, inputs = split_sets(arch, sets, device)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(_TEMPLATE.format(arch=arch, config=overrides, device=device, **inputs))
    return path
