"""Liger-Kernel's patched Llama beside eager and beside kforge's, on the decoder `kforge model
--hf-config` wrote (MODEL_DIR/hf_model.py, and MODEL_DIR/patch.py once its regions went through the
loop): the same weights, prefill and decode (KV-cache steps) timed interleaved in this one process,
outputs compared with eager's. Prints `ok NAME ...` lines, or `liger: unavailable (why)` when
liger_kernel does not import (it is optional).

    python bench/model_liger.py MODEL_DIR [REPS]"""

import contextlib
import importlib.util
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))
from kforge_worker.model import decoding, end_to_end  # noqa: E402


MISSING = object()


def set_attributes(module, values: dict) -> None:
    for k, v in values.items():
        if v is MISSING:
            delattr(module, k)
        else:
            setattr(module, k, v)


@contextlib.contextmanager
def attributes(module, values: dict):
    """``module``'s attributes set to ``values`` inside the block, restored after it."""
    saved = {k: getattr(module, k, MISSING) for k in values}
    set_attributes(module, values)
    try:
        yield
    finally:
        set_attributes(module, saved)


def main() -> int:
    out_dir, reps = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 10
    try:
        from liger_kernel.transformers import apply_liger_kernel_to_llama
    except Exception as e:  # not installed, or built for another torch/transformers
        print(f"liger: unavailable ({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})")
        return 0
    spec = importlib.util.spec_from_file_location("hf_model", out_dir / "hf_model.py")
    hf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hf)
    # Every model is built before Liger patches anything: apply_liger_kernel_to_llama also swaps
    # classes and functions of transformers' modeling_llama, which would reach models built after it,
    # and a function looked up at call time (the rotary embedding) would reach every model.
    torch.manual_seed(0)
    eager = hf.get_model().eval().cuda()
    torch.manual_seed(0)
    liger = hf.get_model().eval().cuda()
    models = {"eager": eager, "liger": liger}
    patch = out_dir / "patch.py"
    if patch.is_file():  # kforge's kernels, installed the way a user installs them
        spec = importlib.util.spec_from_file_location("kforge_patch", patch)
        kforge_patch = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(kforge_patch)
        torch.manual_seed(0)
        models["kforge"] = hf.get_model().eval().cuda()
        kforge_patch.apply(models["kforge"])
        print(f"ok kforge: patch.py installed the kernels of {[i['region'] for i in kforge_patch.INSTALL]}")
    llama = sys.modules[type(liger).__module__]
    before = dict(vars(llama))
    try:
        apply_liger_kernel_to_llama(model=liger)
    except Exception as e:  # a liger_kernel that does not know this transformers' Llama
        print(f"liger: unavailable (apply_liger_kernel_to_llama raised {type(e).__name__}: {e})")
        return 0
    swaps = {k: v for k, v in vars(llama).items() if before.get(k, MISSING) is not v}
    set_attributes(llama, {k: before.get(k, MISSING) for k in swaps})
    print(f"ok liger: {llama.__name__}.{{{', '.join(sorted(swaps))}}} swapped only while Liger's model runs")
    scope = {n: (lambda: attributes(llama, swaps)) if n == "liger" else contextlib.nullcontext for n in models}
    torch.manual_seed(1000)
    prompt = hf.get_inputs()[0].cuda()
    cache_arg = decoding.cache_argument(eager)
    steps = decoding.tokens(eager, prompt.shape[0], hf.decode_steps, 1000, "cuda")
    sync = torch.cuda.synchronize
    with torch.no_grad():
        want = eager(prompt).logits.float()
        for n in models:
            if n != "eager":
                with scope[n]():
                    got = models[n](prompt).logits.float()
                print(f"ok {n}: prefill logits max abs error vs eager {float((want - got).abs().max()):.3g}")
    prefill = {n: [] for n in models}
    decode = {n: [] for n in models}
    rng = random.Random(0)
    with torch.no_grad():
        for n, m in models.items():
            with scope[n]():
                m(prompt)
                decoding.decode(m, prompt, steps, cache_arg, sync)
        for _ in range(reps):
            names = list(models)
            rng.shuffle(names)
            for n in names:
                with scope[n]():
                    sync()
                    t = time.perf_counter()
                    models[n](prompt)
                    sync()
                prefill[n].append((time.perf_counter() - t) * 1e3)
            rng.shuffle(names)
            for n in names:
                with scope[n]():
                    decode[n].append(decoding.decode(models[n], prompt, steps, cache_arg, sync)[0])
    tokens_prefill, tokens_decode = prompt.numel(), steps.numel()
    for n in models:
        p, d = end_to_end.interval(prefill[n]), end_to_end.interval(decode[n])
        speed = "" if n == "eager" else (
            f", speedup prefill {end_to_end.interval([e / x for e, x in zip(prefill['eager'], prefill[n])])['median']:.2f}x"
            f" decode {end_to_end.interval([e / x for e, x in zip(decode['eager'], decode[n])])['median']:.2f}x")
        print(f"ok {n}: prefill {p['median']:.2f} ms ({tokens_prefill / p['median'] * 1e3:,.0f} tokens/s), "
              f"decode {d['median']:.2f} ms for {steps.shape[1]} steps ({tokens_decode / d['median'] * 1e3:,.0f} tokens/s){speed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
