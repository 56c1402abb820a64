import textwrap

import pytest

from kforge_worker.checks import static_checks

REF = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.linear = nn.Linear(n, n)

        def forward(self, x):
            return torch.softmax(self.linear(x), dim=1)
""")
ALLOWED = ["matmul", "linear"]


def verdicts(source, ref=REF):
    return {c["name"]: c["verdict"] for c in static_checks.run(textwrap.dedent(source), ref, ALLOWED)}


def test_reference_computations_include_modules_called_in_forward():
    assert static_checks.reference_computations(REF) == {"matmul", "softmax"}


def test_aliased_delegation_is_resolved():
    v = verdicts("""
        import torch.nn.functional as Fn
        from torch import nn
        class ModelNew(nn.Module):
            def forward(self, x):
                return Fn.softmax(x @ x, dim=1)
    """)
    assert v["static.torch_delegation"] == "fail"


def test_library_gemm_with_own_epilogue_is_allowed():
    v = verdicts("""
        import torch
        from kforge_worker import native
        _lib = native.load("extern \\"C\\" void softmax(float* y) {}", {"softmax": [native.PTR]})
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                y = torch.mm(x, x)
                _lib.softmax(native.ptr(y))
                return y
    """)
    assert v["static.torch_delegation"] == "pass"


HELION = """
    import helion
    import helion.language as hl
    import torch
    import torch.nn as nn

    @helion.kernel(config=helion.Config(block_sizes=[1024]))
    def softmax_rows(x):
        out = torch.empty_like(x)
        for tile in hl.tile(x.size(0)):
            out[tile, :] = torch.softmax(x[tile, :] @ x[tile, :], dim=1)
        return out
    {host}

    class ModelNew(nn.Module):
        def forward(self, x):
            return softmax_rows(x)
"""


def test_torch_inside_a_targets_kernel_loop_is_kernel_code_and_outside_it_is_delegation():
    def verdict(source, loops):
        checks = static_checks.run(textwrap.dedent(source), REF, [], kernel_loops=loops)
        return {c["name"]: c["verdict"] for c in checks}["static.torch_delegation"]

    tiled = HELION.replace("{host}", "")
    assert verdict(tiled, ["helion.language.tile"]) == "pass"
    assert verdict(tiled, []) == "fail", "without the target's declaration the same calls are library calls"
    # The same DSL function with the work in its host code, outside any tile loop: delegation.
    host = HELION.replace("{host}", "").replace(
        "        return out\n", "        return torch.softmax(x @ x, dim=1)\n", 1)
    assert verdict(host, ["helion.language.tile"]) == "fail"
    # A loop over something else named like the DSL's (a local `tile` function) is no kernel loop.
    fake = tiled.replace("for tile in hl.tile(x.size(0))", "for tile in tile_of(x.size(0))").replace(
        "import torch.nn as nn", "import torch.nn as nn\n    tile_of = range")
    assert verdict(fake, ["helion.language.tile"]) == "fail"


def test_exception_fallback_to_torch():
    v = verdicts("""
        import torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                try:
                    return kernel(x)
                except RuntimeError:
                    return torch.softmax(x, 1)
    """)
    assert v["static.reference_fallback"] == "fail"


def test_patching_the_clock_and_caching_on_data_ptr():
    v = verdicts("""
        import time
        import torch
        time.perf_counter = lambda: 0.0
        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.memo = {}
            def forward(self, x):
                key = x.data_ptr()
                if key in self.memo:
                    return self.memo[key]
                self.memo[key] = out = x * 2
                return out
    """)
    assert v["static.monkey_patching"] == "fail"
    assert v["static.output_caching"] == "fail"


def test_threads_fail_in_forward_but_warn_at_import():
    in_forward = verdicts("""
        import threading, torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                threading.Thread(target=print).start()
                return x
    """)
    at_import = verdicts("""
        import threading, torch
        threading.Thread(target=print).start()
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    assert in_forward["static.concurrency"] == "fail"
    assert at_import["static.concurrency"] == "warn"


def test_compiled_source_calls_are_tokenized_not_grepped():
    calls = static_checks.cpp_calls('// fopen(x) in a comment\nconst char* s = "system(1)";\nFILE* f = fopen(p, "r");')
    assert ("", "fopen") in calls and ("", "system") not in calls
    v = verdicts('''
        import torch
        SRC = r"""
        #include <cstdio>
        #include <torch/extension.h>
        extern "C" void k(float* y) { FILE* f = fopen("/tmp/answers", "r"); }
        torch::Tensor f(torch::Tensor x) { return at::softmax(x, 1); }
        """
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x
    ''')
    assert v["static.file_io"] == "fail"
    assert v["static.torch_delegation"] == "fail"


def test_assembled_names_fail():
    v = verdicts("""
        import torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return getattr(torch, "soft" + "max")(x, 1)
    """)
    assert v["static.dynamic_code"] == "fail"
    assert v["static.torch_delegation"] == "pass"  # the runtime check names it


@pytest.mark.parametrize("line", [
    'exec("y = 1")', 'eval("1")', 'compile("1", "f", "eval")', '__import__("o" + "s")',
    'importlib.import_module(name)', 'getattr(sys, "_get" + "frame")', 'setattr(torch, name, None)',
])
def test_code_and_names_built_at_run_time_fail(line):
    v = verdicts(f"""
        import importlib, sys, torch
        name = "x"
        {line}
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    assert v["static.dynamic_code"] == "fail", line


def test_literal_names_and_a_modules_own_attributes_stay_allowed():
    v = verdicts("""
        import torch
        np = __import__("numpy")
        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                for i in range(2):
                    setattr(self, f"w{i}", torch.nn.Parameter(torch.ones(1)))
            def forward(self, x):
                w = getattr(self, "w" + str(0))
                return x * getattr(torch.Tensor, "contiguous")(w)
    """)
    assert v["static.dynamic_code"] == "pass"


@pytest.mark.parametrize("line", [
    "from torch.utils._python_dispatch import _disable_current_modes",
    "import torch.utils._python_dispatch as pd",
    "torch._C._unset_dispatch_mode",
    "torch._C._pop_torch_dispatch_stack()",
    "torch._C._DisableTorchDispatch()",
])
def test_editing_the_dispatch_mode_stack_fails_as_introspection(line):
    v = verdicts(f"""
        import torch
        {line}
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    assert v["static.introspection"] == "fail", line


@pytest.mark.parametrize("expr", ["e.__traceback__", "tb.tb_next", "sys.exc_info()", "traceback.walk_stack(None)"])
def test_traceback_frames_fail_as_introspection(expr):
    v = verdicts(f"""
        import sys, traceback, torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                try:
                    raise RuntimeError
                except RuntimeError as e:
                    tb = e
                    {expr}
                return x
    """)
    assert v["static.introspection"] == "fail", expr


@pytest.mark.parametrize("call", ["os.write(3, b'x')", "os.dup2(1, 3)", "os.fdopen(3, 'w')", "os.close(3)"])
def test_file_descriptor_calls_fail_as_file_io(call):
    v = verdicts(f"""
        import os, torch
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                {call}
                return x
    """)
    assert v["static.file_io"] == "fail", call


def test_the_bundled_helion_candidates_pass_under_the_helion_targets_declarations():
    import pathlib
    import tomllib

    root = pathlib.Path(__file__).resolve().parents[2]
    checks = tomllib.loads((root / "targets" / "helion" / "target.toml").read_text())["checks"]
    candidates = sorted((root / "examples" / "candidates" / "helion").glob("*.py"))
    assert candidates
    for cand in candidates:
        problem = root / "examples" / "problems" / cand.name
        found = static_checks.run(cand.read_text(), problem.read_text(), checks["allowed_torch_calls"],
                                  kernel_loops=checks["kernel_loops"])
        failed = [c for c in found if c["verdict"] == "fail"]
        assert not failed, (cand.name, failed)


def test_kernel_libraries_may_be_imported_under_both_names_and_nothing_else_of_kforge():
    for imports in ("from kforge_kernels import native, ocl, errors", "import kforge_kernels.wgsl as w",
                    "from kforge_worker import native, hip", "from kforge_worker.errors import CompileError",
                    "from kforge_kernels.cuda import compile"):
        assert verdicts(imports + "\n")["static.monkey_patching"] == "pass", imports
    for imports in ("from kforge_kernels import buildinfo", "import kforge_kernels.build_client",
                    "from kforge_worker.roles import candidate", "from kforge_worker.measure.timing import CpuTimer"):
        assert verdicts(imports + "\n")["static.monkey_patching"] == "fail", imports


def test_the_targets_kernel_modules_are_protected_and_build_kernels():
    patch = """
        import fakedsl.runtime
        fakedsl.runtime.launch = lambda *a: None
    """
    assert verdicts(patch)["static.monkey_patching"] == "pass"  # another target's toolchain: not kforge's concern
    findings = static_checks.run(textwrap.dedent(patch), REF, ALLOWED, kernel_modules=["fakedsl"])
    patched = next(c for c in findings if c["name"] == "static.monkey_patching")
    assert patched["verdict"] == "fail" and "reassigns fakedsl.runtime.launch" in patched["message"]
    # What the toolchain returns is a kernel: calling it is not PyTorch delegating the work.
    cand = """
        import torch
        import fakedsl
        softmax_kernel = fakedsl.make("softmax")
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return softmax_kernel.softmax(x)
    """
    assert verdicts(cand)["static.torch_delegation"] == "fail"
    with_modules = {c["name"]: c["verdict"] for c in static_checks.run(textwrap.dedent(cand), REF, ALLOWED,
                                                                        kernel_modules=["fakedsl"])}
    assert with_modules["static.torch_delegation"] == "pass"


@pytest.mark.parametrize("key", ["x.shape", "(x.shape[1], x.dtype)", "(x.device, x.stride())", "x.size(0)",
                                 "len(x)", "n", "(tuple(x.shape), x.is_contiguous())"])
def test_caches_keyed_on_the_inputs_metadata_are_allowed(key):
    v = verdicts(f"""
        import torch
        class ModelNew(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.plans = {{}}
            def forward(self, x):
                n = x.shape[1] * 2
                if {key} not in self.plans:
                    self.plans[{key}] = object()
                return x
    """)
    assert v["static.output_caching"] == "pass", key


@pytest.mark.parametrize("key", ["float(x[0, 0])", "x.sum().item()", "id(x)", "x.data_ptr()", "probe",
                                 "hash(tuple(x[0, :8].tolist()))", "(x.shape, x[0, 0].item())"])
def test_caches_keyed_on_the_inputs_data_or_identity_fail(key):
    v = verdicts(f"""
        import torch
        CACHE = {{}}
        class ModelNew(torch.nn.Module):
            def forward(self, *inputs):
                x, = inputs
                probe = x.view(-1)[0]
                if {key} not in CACHE:
                    CACHE[{key}] = x * 2
                return CACHE[{key}]
    """)
    assert v["static.output_caching"] == "fail", key


def test_a_cached_function_is_judged_by_what_it_is_called_with():
    on_shapes = verdicts("""
        import functools, torch
        @functools.lru_cache
        def plan(n, dtype):
            return n
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                plan(x.shape[0], x.dtype)
                return x
    """)
    on_data = verdicts("""
        import functools, torch
        @functools.lru_cache
        def answer(key):
            return key
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return answer(float(x[0, 0]))
    """)
    assert on_shapes["static.output_caching"] == "pass"
    assert on_data["static.output_caching"] == "fail"


@pytest.mark.parametrize("line", ['os.environ.get("HOME")', 'os.getenv("KFORGE_WORKDIR")', "os.uname()",
                                  'os.path.expanduser("~")', 'x = "/proc/1/cmdline"', 'x = "~/.bashrc"',
                                  "x = sys.argv"])
def test_probing_where_the_module_runs_fails_in_any_branch(line):
    v = verdicts(f"""
        import os, sys, torch
        if False:
            {line}
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x
    """)
    assert v["static.environment_probe"] == "fail", line


def test_an_embedded_kernel_source_is_not_an_environment_probe():
    v = verdicts('''
        import torch
        SRC = "#include <cstdint>\\n// reads /proc/ never\\nextern \\"C\\" void f(float* x) {}"
        class ModelNew(torch.nn.Module):
            def forward(self, x):
                return x
    ''')
    assert v["static.environment_probe"] == "pass"


# A PyTorch fallback in a method that only a branch calls is judged like the branch: a warning, and the
# run-time operator check rejects the candidate if the branch runs.
FALLBACK_METHOD = """
    import torch
    from torch import nn
    from kforge_kernels import native
    class ModelNew(nn.Module):
        def _reference(self, x):
            return torch.softmax(x @ x, dim=1)
        def forward(self, x):
            if not x.is_cuda:
                return self._reference(x)
            return native.run(x)
"""


def test_pytorch_in_a_method_called_only_from_a_branch_warns():
    assert verdicts(FALLBACK_METHOD)["static.torch_delegation"] == "warn"


# The fallback after a guard that returns (the implicit else) is a branch too: 2 of 3 single-shot
# candidates on an H100 were rejected for `if x.is_cuda: return kernel(x)` then `return torch.sum(...)`.
GUARDED_FALLBACK = """
    import torch
    from torch import nn
    from kforge_kernels import native
    class ModelNew(nn.Module):
        def forward(self, x):
            if x.is_cuda and x.dtype == torch.float32:
                if x.dim() == 2:
                    return native.run(x)
            return torch.softmax(x @ x, dim=1)
"""


def test_pytorch_after_a_guard_that_returns_warns():
    assert verdicts(GUARDED_FALLBACK)["static.torch_delegation"] == "warn"


def test_pytorch_before_a_guard_or_after_one_that_never_returns_fails():
    # Computed before the guard: it runs every time.
    before = GUARDED_FALLBACK.replace("            if x.is_cuda and", "            y = torch.softmax(x @ x, dim=1)\n"
                                      "            if x.is_cuda and")
    assert verdicts(before)["static.torch_delegation"] == "fail"
    # A guard whose branches never return does not make what follows conditional.
    no_return = GUARDED_FALLBACK.replace("return native.run(x)", "x = native.run(x)")
    assert verdicts(no_return)["static.torch_delegation"] == "fail"


def test_a_branch_only_method_called_unconditionally_elsewhere_fails():
    # Called before the guard: on every path. (After a guard that returns it is the implicit else,
    # judged as a branch: GUARDED_FALLBACK.)
    v = verdicts(FALLBACK_METHOD.replace("            if not x.is_cuda:", "            y = self._reference(x)\n"
                                         "            if not x.is_cuda:"))
    assert v["static.torch_delegation"] == "fail"


def test_a_fallback_method_installed_as_a_hook_fails():
    # Named outside a branch (a hook registered in __init__): it runs whatever the branches say.
    v = verdicts(FALLBACK_METHOD.replace("class ModelNew(nn.Module):", """class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.register_forward_hook(lambda m, i, o: self._reference(i[0]))"""))
    assert v["static.torch_delegation"] == "fail"


def test_a_helper_reached_through_a_branch_only_method_is_branch_only_too():
    src = FALLBACK_METHOD.replace("""        def _reference(self, x):
            return torch.softmax(x @ x, dim=1)""", """        def _reference(self, x):
            return helper(x)""").replace("class ModelNew", """def helper(x):
        return torch.softmax(x @ x, dim=1)
    class ModelNew""")
    assert verdicts(src)["static.torch_delegation"] == "warn"
    unconditional = src.replace("            if not x.is_cuda:", "            y = helper(x)\n            if not x.is_cuda:")
    assert verdicts(unconditional)["static.torch_delegation"] == "fail"
