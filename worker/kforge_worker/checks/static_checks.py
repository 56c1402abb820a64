"""Static checks on a candidate's source: Python ``ast`` and the C/C++ sources embedded in it.

Runs in the trusted reference process, which reads the candidate as text and never executes it.
Each check yields a verdict (``fail``/``warn``/``pass``) with an explanation and line numbers. They are
a first line only: obfuscated variants (aliases assembled at run time, ``exec``) are stopped by the
runtime checks in runtime_checks.py, which watch what the code does rather than how it is spelled.
"""

import ast
import re
from typing import Dict, Iterable, List, Optional, Set

import kforge_kernels
from kforge_worker.common import ops

CHECKS = ["torch_delegation", "reference_fallback", "monkey_patching", "concurrency", "introspection", "file_io",
          "network", "output_caching", "dynamic_code", "environment_probe"]

# Modules whose attributes a candidate must not reassign: the clocks, torch and kforge's own code (and
# the target's kernel toolchain: [checks] kernel_modules).
_PROTECTED_ROOTS = {"torch", "time", "kforge_worker", "kforge_kernels", "builtins", "sys", "os", "gc", "ctypes",
                    "threading", "numpy", "functools", "importlib", "inspect", "math", "operator", "types"}
# kforge's packages, and the modules of them a candidate may import: the kernel libraries, under
# their own package and under the names kforge_worker keeps for older candidates.
_KFORGE_PACKAGES = ("kforge_kernels", "kforge_worker")
_KFORGE_OK = {f"{package}.{library}" for package in _KFORGE_PACKAGES for library in kforge_kernels.LIBRARIES}
# Builders whose results are compiled kernels, whatever the target (beside the kernel libraries).
_GENERIC_BUILDERS = {"ctypes", "torch.utils.cpp_extension"}

_CONCURRENCY_CALLS = {
    "threading.Thread", "threading.Timer", "_thread.start_new_thread", "_thread.start_new",
    "multiprocessing.Process", "multiprocessing.Pool", "multiprocessing.get_context", "torch.multiprocessing.spawn",
    "torch.multiprocessing.Process", "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
    "subprocess.Popen", "subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
    "os.fork", "os.forkpty", "os.system", "os.popen", "os.posix_spawn", "os.posix_spawnp", "os.spawnv", "os.spawnl",
    "os.execv", "os.execve", "os.execl", "os.execvp", "asyncio.run", "asyncio.create_task", "asyncio.get_event_loop",
    "torch.cuda.Stream", "torch.cuda.stream", "torch.cuda.ExternalStream", "torch.Stream",
    "torch.cuda.set_stream", "torch.cuda.graphs.CUDAGraph", "torch.cuda.CUDAGraph",
}
_CONCURRENCY_MODULES = {"threading", "_thread", "multiprocessing", "concurrent", "subprocess", "asyncio",
                        "torch.multiprocessing"}
_INTROSPECTION_CALLS = {"sys._getframe", "sys._current_frames", "inspect.currentframe", "inspect.stack",
                        "inspect.getouterframes", "inspect.getmembers", "inspect.getsource", "gc.get_objects",
                        "gc.get_referrers", "gc.get_referents", "globals", "locals", "vars", "sys.settrace",
                        "sys.setprofile", "threading.settrace", "sys.addaudithook", "ctypes.pythonapi",
                        "ctypes.string_at", "ctypes.memmove", "ctypes.cast"}
_INTROSPECTION_ATTRS = {"f_back", "f_locals", "f_globals", "f_builtins", "f_code", "tb_frame", "tb_next", "gi_frame",
                        "cr_frame", "ag_frame", "__traceback__", "__globals__", "__closure__", "__subclasses__",
                        "__builtins__", "__code__", "__dict__", "__mro__", "__bases__"}
_INTROSPECTION_CALLS |= {"traceback.walk_stack", "traceback.walk_tb", "traceback.extract_stack", "traceback.print_stack",
                         "traceback.format_stack", "traceback.StackSummary.extract", "sys.exc_info", "sys.exception",
                         "sys._current_exceptions"}
# The dispatch-mode stack kforge's operator recorder sits on (runtime_checks._OpRecorder): switching
# modes off, popping or pushing them lets torch work run where the recorder cannot see it. Any spelling
# that ends in one of these names, through any module (torch.utils._python_dispatch, torch._C, ...).
_DISPATCH_MODE_NAMES = {"_disable_current_modes", "_pop_mode", "_push_mode", "_pop_mode_temporarily",
                        "_get_current_dispatch_mode", "_get_current_dispatch_mode_stack", "_set_dispatch_mode",
                        "_unset_dispatch_mode", "_pop_torch_dispatch_stack", "_push_on_torch_dispatch_stack",
                        "_get_dispatch_stack_at", "_len_torch_dispatch_stack", "_DisableTorchDispatch",
                        "_DisableFuncTorch", "_ExcludeDispatchKeyGuard", "_RestorePythonTLSSnapshot",
                        "_ForceDispatchKeyGuard", "_PreserveDispatchKeyGuard", "_set_torch_dispatch_mode",
                        "_disabled_torch_dispatch_impl", "_python_dispatch", "_pop_torch_function_stack",
                        "_push_on_torch_function_stack", "_disable_infra_mode", "_disable_current_modes_context",
                        # The thread's dispatch keys (excluding the Python key skips every mode), and
                        # torch's own aliases of the switches (_mode_utils.no_dispatch).
                        "ExcludeDispatchKeyGuard", "_IncludeDispatchKeyGuard", "_SetExcludeDispatchKeyGuard",
                        "_dispatch_tls_set_dispatch_key_excluded", "_dispatch_tls_set_dispatch_key_included",
                        "_mode_utils", "no_dispatch"}
_FILE_CALLS = {"open", "io.open", "os.open", "os.read", "os.write", "os.pwrite", "os.writev", "os.dup", "os.dup2",
               "os.fdopen", "os.close", "os.pipe", "os.sendfile", "os.truncate", "os.ftruncate", "os.remove", "os.unlink", "os.rename",
               "os.replace", "os.listdir", "os.scandir", "os.walk", "os.makedirs", "os.mkdir", "os.stat",
               "shutil.copy", "shutil.copyfile", "shutil.rmtree", "shutil.move", "torch.load", "torch.save",
               "numpy.load", "numpy.save", "numpy.fromfile", "numpy.memmap", "mmap.mmap", "pickle.load",
               "pickle.dump", "pickle.loads", "glob.glob", "tempfile.NamedTemporaryFile", "pathlib.Path",
               "os.path.exists", "os.path.isfile"}
# Reading where it runs: a candidate that can tell kforge's sandbox from a user's machine can behave
# only while it is watched (best.py runs outside). Any branch of the module counts, run or not.
_PROBE_CALLS = {"os.getenv", "os.getenvb", "os.environ.get", "os.environ.copy", "os.environ.items", "os.environ.keys",
                "os.uname", "os.getuid", "os.geteuid", "os.getppid", "os.getlogin", "os.path.expanduser",
                "platform.node", "platform.uname", "socket.gethostname", "getpass.getuser", "pwd.getpwuid",
                "os.path.exists", "os.path.isdir", "os.access"}
_PROBE_NAMES = {"os.environ", "os.environb", "sys.argv", "sys.orig_argv"}
_PROBE_STRINGS = re.compile(r"/proc/|/sys/fs/cgroup|\.dockerenv|bwrap|bubblewrap|\bKFORGE_|\.bashrc|\.profile\b|"
                            r"\.zshrc|\.ssh/|container=|/run/\.containerenv")
_FILE_METHODS = {"read_text", "read_bytes", "write_text", "write_bytes", "iterdir", "glob", "rglob"}
_NETWORK_MODULES = {"socket", "urllib", "http", "requests", "ftplib", "smtplib", "httpx", "aiohttp", "ssl",
                    "xmlrpc", "websocket", "paramiko"}
_DYNAMIC_CALLS = {"exec", "eval", "compile", "__import__", "importlib.import_module", "getattr", "setattr",
                  "delattr", "types.FunctionType", "types.CodeType", "marshal.loads", "builtins.exec", "builtins.eval",
                  "builtins.compile", "builtins.__import__", "builtins.getattr", "runpy.run_path", "runpy.run_module",
                  "code.InteractiveInterpreter", "importlib.__import__", "importlib.util.spec_from_file_location",
                  "importlib.util.module_from_spec"}
_KEY_CALLS = {"id", "hash", "data_ptr", "tobytes", "item", "tolist", "untyped_storage", "_version", "numpy", "sum",
              "mean", "abs", "float", "str", "repr", "tuple", "bytes"}
_KERNEL_LOADERS = {"load", "load_inline", "CDLL", "cdll.LoadLibrary", "compile", "build", "Program", "jit",
                   "load_library", "kernel", "cuda"}

# C/C++ identifiers, called in compiled sources, and what they mean there.
_NATIVE_CALLS = {
    "file_io": {"fopen", "freopen", "open", "openat", "fread", "fwrite", "fgets", "fscanf", "ifstream", "ofstream",
                "fstream", "mmap", "unlink", "remove", "rename", "opendir", "readdir"},
    "network": {"socket", "connect", "bind", "listen", "accept", "send", "recv", "sendto", "recvfrom",
                "getaddrinfo", "gethostbyname", "curl_easy_init"},
    "concurrency": {"pthread_create", "fork", "vfork", "clone", "system", "popen", "execv", "execve", "execl",
                    "execvp", "posix_spawn", "async", "thread", "jthread", "cudaStreamCreate",
                    "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "getStreamFromPool",
                    "cudaGraphLaunch", "hipStreamCreate"},
    "introspection": {"dlopen", "dlsym", "PyEval_GetFrame", "PyRun_SimpleString", "PyImport_ImportModule",
                      "PyObject_SetAttrString", "PyObject_CallObject", "process_vm_readv", "ptrace"},
}
_NATIVE_TORCH_NS = ("at", "torch", "c10d")


class _Finding:
    def __init__(self, check: str, verdict: str, line: int, message: str):
        self.check, self.verdict, self.line, self.message = check, verdict, line, message


def _within(name: str, modules: Iterable[str]) -> bool:
    """Whether the dotted ``name`` is one of ``modules`` or inside one of them."""
    return any(name == m or name.startswith(m + ".") for m in modules)


class _Analyzer(ast.NodeVisitor):
    """Walks one module, resolving import aliases, and records what each function calls.
    ``kernel_modules``: the target's kernel toolchain (``[checks] kernel_modules``)."""

    def __init__(self, kernel_modules: Iterable[str] = ()):
        self.kernel_modules = set(kernel_modules)
        self.builders = _KFORGE_OK | _GENERIC_BUILDERS | self.kernel_modules
        self.aliases: Dict[str, str] = {}      # local name -> dotted module/function path
        self.kernel_names: Set[str] = set()    # names and self-attributes bound to compiled kernels
        self.module_attrs: Dict[str, str] = {}  # self.<attr> -> canonical computation of an nn module
        self.findings: List[_Finding] = []
        self.functions: Dict[str, ast.AST] = {}
        self.classes: Dict[str, ast.ClassDef] = {}
        self.strings: List[ast.Constant] = []
        self.native: Set[ast.Constant] = set()
        self.tree: ast.Module = ast.Module(body=[], type_ignores=[])
        self.module_names: Set[str] = set()  # names assigned at module level: storage that outlives a call

    # -- names --------------------------------------------------------------------------------
    def dotted(self, node) -> Optional[str]:
        """``F.relu`` -> ``torch.nn.functional.relu`` after alias resolution; None for non-name chains."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            root = self.aliases.get(node.id, node.id)
            return ".".join([root] + list(reversed(parts)))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            return ".".join([node.args[0].value] + list(reversed(parts)))
        return None

    def add(self, check, verdict, node, message):
        self.findings.append(_Finding(check, verdict, getattr(node, "lineno", 0), message))

    # -- collection pass ----------------------------------------------------------------------
    def collect(self, tree: ast.Module):
        self.tree = tree
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                for t in (node.targets if isinstance(node, ast.Assign) else [node.target]):
                    self.module_names.update(sub.id for sub in ast.walk(t) if isinstance(sub, ast.Name))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    self.aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                    self._check_import(a.name, node)
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    self.aliases[a.asname or a.name] = f"{node.module}.{a.name}"
                    self._check_import(f"{node.module}.{a.name}", node)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self.strings.append(node)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions[node.name] = node
            elif isinstance(node, ast.ClassDef):
                self.classes[node.name] = node
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
                callee = self.dotted(node.value.func) or ""
                last = callee.split(".")[-1]
                for target in node.targets:
                    name = _target_name(target)
                    if name is None:
                        continue
                    if last in _KERNEL_LOADERS or _within(callee, self.builders):
                        self.kernel_names.add(name)
                    if callee.startswith("torch.nn.") and last in ops.MODULES:
                        self.module_attrs[name] = ops.MODULES[last]

    def protected(self, path: str) -> bool:
        """Whether ``path`` names something of a module whose attributes a candidate must not reassign."""
        return path.split(".")[0] in _PROTECTED_ROOTS or _within(path, self.kernel_modules)

    def _check_import(self, name: str, node):
        root = name.split(".")[0]
        if root in _KFORGE_PACKAGES and name != root and not _within(name, _KFORGE_OK):
            self.add("monkey_patching", "fail", node, f"imports {name}: kforge's internals are off limits (candidates "
                                                      f"may import kforge_kernels' {', '.join(kforge_kernels.LIBRARIES)})")
        if root in _NETWORK_MODULES:
            self.add("network", "fail", node, f"imports {name}: a kernel has no use for the network")
        if any(name == m or name.startswith(m + ".") for m in _CONCURRENCY_MODULES):
            self.add("concurrency", "warn", node, f"imports {name}")
        if root in ("inspect", "gc") or name in ("sys._getframe",):
            self.add("introspection", "warn", node, f"imports {name}")
        if root in ("pickle", "shutil", "mmap", "tempfile", "glob", "pathlib", "marshal"):
            self.add("file_io", "warn", node, f"imports {name}")

    # -- per-node checks (whole module) -------------------------------------------------------
    def check_everywhere(self, tree: ast.Module):
        self.native = set(_native_sources(self))  # embedded C/C++: its strings are its own (#include <...>)
        for node in ast.walk(tree):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for t in targets:
                    self._check_patch_target(t, node)
            elif isinstance(node, ast.Call):
                self._check_call(node)
            elif isinstance(node, ast.Attribute) and node.attr in _INTROSPECTION_ATTRS:
                self.add("introspection", "fail", node, f"uses .{node.attr}, which reaches into other code's frames, "
                                                        f"globals or classes")
            if isinstance(node, (ast.Attribute, ast.Name)) and isinstance(getattr(node, "ctx", None), ast.Load) \
                    and self.dotted(node) in _PROBE_NAMES:
                self.add("environment_probe", "fail", node, f"reads {self.dotted(node)}: a kernel that can tell where it "
                                                            f"runs can behave differently outside kforge")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _PROBE_STRINGS.search(node.value) \
                    and node not in self.native:
                found = _PROBE_STRINGS.search(node.value).group()
                self.add("environment_probe", "fail", node, f"names {found!r}: a kernel has no use for the machine's or "
                                                            f"the sandbox's markers")
            if isinstance(node, (ast.Attribute, ast.Name, ast.alias)):
                name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) \
                    else node.name.split(".")[-1]
                if name in _DISPATCH_MODE_NAMES:
                    self.add("introspection", "fail", node, f"uses {name}, which edits or switches off torch's dispatch "
                                                            f"modes (kforge's operator recorder is one)")

    def _check_patch_target(self, target, node):
        if isinstance(target, ast.Subscript):
            base = self.dotted(target.value) or ""
            if base in ("sys.modules", "builtins.__dict__", "os.environ"):
                self.add("monkey_patching", "fail", node, f"writes {base}[...]")
            return
        if not isinstance(target, ast.Attribute):
            return
        path = self.dotted(target)
        if path and self.protected(path):
            self.add("monkey_patching", "fail", node, f"reassigns {path}")

    def _check_call(self, node: ast.Call):
        name = self.dotted(node.func) or ""
        last = name.split(".")[-1]
        if name in ("setattr", "delattr", "builtins.setattr", "object.__setattr__", "type.__setattr__") and node.args:
            owner = self.dotted(node.args[0]) or ""
            if (owner and self.protected(owner)) or owner.startswith("sys.modules"):
                self.add("monkey_patching", "fail", node, f"{name}() on {owner}")
            elif not (isinstance(node.args[0], ast.Name) and node.args[0].id == "self"):
                self.add("monkey_patching", "warn", node, f"{name}() on {owner or 'a computed object'}")
        if name in _CONCURRENCY_CALLS or (name.startswith("torch.cuda.") and last in ("Stream", "stream")):
            self.add("concurrency", "fail", node, f"calls {name}: work outside the timed call escapes the timer")
        if name in _INTROSPECTION_CALLS:
            self.add("introspection", "fail", node, f"calls {name}")
        if name in _FILE_CALLS or (last in _FILE_METHODS and isinstance(node.func, ast.Attribute)):
            self.add("file_io", "fail", node, f"calls {name or last}: a kernel reads its inputs, not files")
        root = name.split(".")[0]
        if root in _NETWORK_MODULES:
            self.add("network", "fail", node, f"calls {name}")
        if name in _PROBE_CALLS:
            self.add("environment_probe", "fail", node, f"calls {name}: a kernel that can tell where it runs can "
                                                        f"behave differently outside kforge")
        if name in _DYNAMIC_CALLS:
            self._check_dynamic(name, node)

    def _check_dynamic(self, name: str, node: ast.Call):
        """Code and names built at run time hide from every check that reads the source; no kernel needs
        them. Still allowed: getattr/setattr/delattr with a literal name, any of them on ``self`` (a
        module's own layers and parameters), and __import__/import_module of a literal module name."""
        on_self = bool(node.args) and isinstance(node.args[0], ast.Name) and node.args[0].id == "self"
        if name in ("getattr", "setattr", "delattr"):
            if on_self or (len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)):
                return
            what = f"{name}() with a computed attribute name"
        elif name in ("__import__", "importlib.import_module"):
            if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                return
            what = f"{name}() of a computed module name"
        else:
            what = f"{name}()"
        self.add("dynamic_code", "fail", node, f"calls {what}: code and names built at run time hide what they do "
                                               f"from the checks (spell the name out)")


def _target_name(target) -> Optional[str]:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return "self." + target.attr
    return None


def _receiver_name(node) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return "self." + node.attr
    return None


def _runtime_functions(a: _Analyzer, model_class: str) -> List[ast.AST]:
    """Methods of the model class except __init__, and module functions they call (transitively)."""
    cls = a.classes.get(model_class)
    if cls is None:
        return []
    roots = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name != "__init__"]
    seen, queue = set(), list(roots)
    out = []
    while queue:
        fn = queue.pop()
        if id(fn) in seen:
            continue
        seen.add(id(fn))
        out.append(fn)
        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in a.functions:
                queue.append(a.functions[node.func.id])
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self":
                for m in cls.body:
                    if isinstance(m, ast.FunctionDef) and m.name == node.func.attr and m.name != "__init__":
                        queue.append(m)
    return out


def _kernel_loop_bodies(a: _Analyzer, functions: Iterable[ast.AST], kernel_loops: Set[str]) -> Set[int]:
    """Ids of the nodes inside ``for ... in <kernel loop>(...)`` bodies: compiled to device code by the
    target's DSL (a tile loop, [checks] kernel_loops), so the PyTorch calls there are its kernel
    language. Only the loop body counts: the same call outside such a loop is host code and judged as
    usual."""
    inside: Set[int] = set()
    if not kernel_loops:
        return inside
    for fn in functions:
        for node in ast.walk(fn):
            if isinstance(node, (ast.For, ast.AsyncFor)) and isinstance(node.iter, ast.Call) \
                    and a.dotted(node.iter.func) in kernel_loops:
                for stmt in node.body:
                    inside.update(id(sub) for sub in ast.walk(stmt))
    return inside


def torch_computations(a: _Analyzer, functions: Iterable[ast.AST], skip: Set[int] = frozenset()) -> Dict[str, int]:
    """Canonical PyTorch computations called in ``functions``, each with the first line it appears on
    (nodes whose id is in ``skip`` left out)."""
    found: Dict[str, int] = {}

    def note(op, node):
        if op and op not in found and id(node) not in skip:
            found[op] = node.lineno

    for fn in functions:
        for node in ast.walk(fn):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
                note("matmul", node)
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = a.dotted(func)
            if name == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                owner = a.dotted(node.args[0]) or ""
                if owner.startswith("torch"):
                    note(ops.canonical(str(node.args[1].value)), node)
                continue
            if name and name.split(".")[0] == "torch":
                last = name.split(".")[-1]
                if name.startswith("torch.nn.") and last in ops.MODULES:
                    continue  # constructing a module computes nothing
                note(ops.canonical(last), node)
                continue
            if isinstance(func, ast.Attribute):
                recv = _receiver_name(func.value)
                if recv in a.kernel_names or (name and name.split(".")[0] in a.aliases
                                              and not name.startswith("torch")):
                    continue  # a compiled kernel's entry point, or a non-torch module (math, numpy)
                if a.dotted(func.value) and (a.dotted(func.value) or "").startswith("self.") and recv in a.kernel_names:
                    continue
                note(ops.canonical(func.attr), node)
            recv = _receiver_name(func)
            if recv in a.module_attrs:
                note(a.module_attrs[recv], node)
    return found


def reference_computations(source: str) -> Set[str]:
    """The canonical computations the reference problem's Model performs, read from its source."""
    tree = ast.parse(source)
    a = _Analyzer()
    a.collect(tree)
    return set(torch_computations(a, _runtime_functions(a, "Model")))


def _native_sources(a: _Analyzer) -> List[ast.Constant]:
    return [s for s in a.strings if re.search(r"#\s*include|extern\s+\"C\"|__global__|__kernel|\bvoid\s+\w+\s*\(",
                                              s.value)]


# Linear time on any input: every alternative consumes what it scans. An unterminated comment runs to
# the end, an unterminated literal to the end of its line, and a directive's leading blanks stay on
# its own line (``^\s*`` would rescan runs of blank lines from every line start: quadratic).
_CPP_TOKEN = re.compile(r"""
    (?P<comment>//[^\n]*|/\*.*?(?:\*/|\Z))
  | (?P<string>"(?:\\.|[^"\\\n])*(?:"|$)|'(?:\\.|[^'\\\n])*(?:'|$))
  | (?P<pre>^[ \t]*\#[^\n]*)
  | (?P<ident>[A-Za-z_]\w*)
  | (?P<scope>::)
  | (?P<punct>\S)
""", re.S | re.M | re.X)


def cpp_calls(source: str) -> List[tuple]:
    """(namespace path, function) for each call in C/C++ source, comments and literals skipped."""
    tokens = []
    for m in _CPP_TOKEN.finditer(source):
        kind = m.lastgroup
        if kind in ("comment", "string", "pre"):
            continue
        tokens.append((kind, m.group()))
    calls = []
    for i, (kind, text) in enumerate(tokens):
        if kind != "ident":
            continue
        nxt = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if nxt not in ("(", "<", "{"):
            continue
        if nxt == "<" and text not in ("thread", "jthread", "async"):
            continue
        ns = []
        j = i
        while j >= 2 and tokens[j - 1][0] == "scope" and tokens[j - 2][0] == "ident":
            ns.insert(0, tokens[j - 2][1])
            j -= 2
        if j >= 1 and tokens[j - 1][1] in (".", "->") and not ns:
            ns = ["."]
        calls.append(("::".join(ns), text))
    return calls


def check_native(a: _Analyzer, reference_ops: Set[str], allowed: Set[str]) -> None:
    for const in _native_sources(a):
        for ns, fn in cpp_calls(const.value):
            if ns == ".":
                continue  # a member call (obj.open()) is not the C library's
            for check, names in _NATIVE_CALLS.items():
                if fn in names and ns in ("", "std", "std::this_thread", "at::cuda", "c10::cuda"):
                    a.add(check, "fail", const, f"compiled source calls {(ns + '::') if ns else ''}{fn}()")
            if ns.split("::")[0] in _NATIVE_TORCH_NS:
                op = ops.canonical(fn)
                if op and op in ops.main_computation(reference_ops) and op not in allowed:
                    a.add("torch_delegation", "fail", const,
                          f"compiled source calls {ns}::{fn}(), the reference's own computation, through ATen")


def _import_time_concurrency(a: _Analyzer, runtime: Iterable[ast.AST]) -> None:
    """Threads and processes started at import or construction cannot hide work from a timer (nothing
    is timed yet) and the sandbox ends them: a warning there, a failure only inside per-call code."""
    inside = set()
    for fn in runtime:
        for node in ast.walk(fn):
            inside.add(getattr(node, "lineno", -1))
    for f in a.findings:
        if f.check == "concurrency" and f.verdict == "fail" and f.line not in inside:
            f.verdict = "warn"
            f.message += " (at import or construction)"


# What a cache of compiled kernels, plans, workspaces or autotuning choices is keyed on: the inputs'
# metadata. A key that reads these of an input (and nothing else of it) is allowed.
_META_ATTRS = {"shape", "dtype", "device", "ndim", "layout", "is_cuda", "requires_grad", "is_sparse", "itemsize",
               "is_quantized", "is_meta", "names", "index"}  # index: a torch.device's (tensors have none)
_META_METHODS = {"size", "dim", "stride", "numel", "nelement", "ndimension", "is_contiguous", "element_size",
                 "get_device", "is_floating_point", "is_complex"}
_META_FUNCTIONS = {"len", "isinstance", "type"}
# Identities of buffers: a key made of these remembers which tensor came in, not its kind.
_IDENTITY_CALLS = {"id", "data_ptr", "untyped_storage", "storage", "_cdata", "_version"}
_CACHE_DECORATORS = ("lru_cache", "cache", "cached_property", "memoize")


def _output_caching(a: _Analyzer, functions: Iterable[ast.AST]) -> None:
    """Per-call code that stores or looks up results under a key made from the inputs' data or
    identity. Keys made only of the inputs' metadata (shapes, dtypes, strides, devices, channel
    counts) are what caches of compiled modules, plans, workspaces and autotuning choices use: allowed."""
    functions = list(functions)
    cached = {}
    for node in ast.walk(a.tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for deco in node.decorator_list:
                name = a.dotted(deco.func if isinstance(deco, ast.Call) else deco) or ""
                if name.split(".")[-1] in _CACHE_DECORATORS:
                    cached[node.name] = (node, deco, name)
    for fn in functions:
        if fn.name in cached and cached[fn.name][0] is fn and _is_method(a, fn):
            a.add("output_caching", "fail", cached[fn.name][1], f"@{cached[fn.name][2]} on a method that runs per "
                                                                 f"call caches its outputs")
        data = _data_derived(a, fn, _metadata_parameters(a, fn, functions))
        for node in ast.walk(fn):
            key = None
            if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store) and _is_container(a, node.value):
                key = node.slice
            elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
                key = node.left
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in ("get", "setdefault", "__contains__", "__getitem__", "pop") and node.args:
                key = node.args[0]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in cached:
                if any(_uses_data(a, arg, data) for arg in list(node.args) + [k.value for k in node.keywords]):
                    a.add("output_caching", "fail", node, f"calls {node.func.id}, cached by @{cached[node.func.id][2]}, "
                                                          f"with the inputs' data: a cached answer skips the work "
                                                          f"the timer is meant to see")
                continue
            if key is not None and _uses_data(a, key, data):
                a.add("output_caching", "fail", node, "stores or looks up results keyed on the inputs' data or "
                                                      "identity: a cached answer skips the work the timer is meant "
                                                      "to see (keys of shapes, dtypes, strides and devices are fine)")


def _is_method(a: _Analyzer, fn) -> bool:
    return any(fn in cls.body for cls in a.classes.values())


def _parameters(fn) -> Set[str]:
    args = fn.args
    names = {x.arg for x in args.posonlyargs + args.args + args.kwonlyargs if x.arg != "self"}
    names |= {x.arg for x in (args.vararg, args.kwarg) if x is not None}
    return names


def _metadata_parameters(a: _Analyzer, fn, functions: List[ast.AST]) -> Set[str]:
    """Parameters of a helper that every call of it (by name, from the runtime functions) passes
    metadata or constants: ``_kernel_for(x.shape[1], 3)`` makes its cache keyed on a channel count.
    None where a call is unknown, unpacks arguments, or passes the inputs' data."""
    calls = [(caller, node) for caller in functions if caller is not fn for node in ast.walk(caller)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == fn.name]
    if not calls or _is_method(a, fn):
        return set()
    positional = [x.arg for x in fn.args.posonlyargs + fn.args.args]
    meta = set(positional) | {x.arg for x in fn.args.kwonlyargs}
    callers_data = {}  # a caller's data names, computed once however often it calls
    for caller, call in calls:
        if id(caller) not in callers_data:
            callers_data[id(caller)] = _data_derived(a, caller)
        caller_data = callers_data[id(caller)]
        if any(isinstance(arg, ast.Starred) for arg in call.args) or any(k.arg is None for k in call.keywords):
            return set()
        passed = {name: arg for name, arg in zip(positional, call.args)} | {k.arg: k.value for k in call.keywords}
        for name in list(meta):
            if name in passed and _uses_data(a, passed[name], caller_data):
                meta.discard(name)
    return meta


def _data_derived(a: _Analyzer, fn, metadata_parameters: Set[str] = frozenset()) -> Set[str]:
    """The function's parameters (less those its callers pass metadata in) and the local names
    assigned from their data (not from their metadata alone): ``y = x * 2`` and ``a, b = inputs``
    are data; ``n = x.shape[1]`` is not."""
    derived = _parameters(fn) - set(metadata_parameters)
    changed = True
    while changed:
        changed = False
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and node.value is not None:
                targets, value = (node.targets if isinstance(node, ast.Assign) else [node.target]), node.value
            elif isinstance(node, (ast.For, ast.comprehension)):
                targets, value = [node.target], node.iter
            elif isinstance(node, ast.NamedExpr):
                targets, value = [node.target], node.value
            else:
                continue
            if not _uses_data(a, value, derived):
                continue
            for name in (n for t in targets for n in _bound_names(t)):
                if name not in derived:
                    derived.add(name)
                    changed = True
    return derived


def _bound_names(target) -> List[str]:
    """The names an assignment target binds (``a, *b = ...``), not those inside ``d[k] = ...``."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _bound_names(e)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


def _uses_data(a: _Analyzer, expr, names: Set[str]) -> bool:
    """Whether ``expr`` reads the data or the identity of any of ``names`` (metadata reads excepted),
    or the identity of any buffer."""
    parents = {}
    for node in ast.walk(expr):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Call):
            called = (a.dotted(sub.func) or "").split(".")[-1] or (
                sub.func.attr if isinstance(sub.func, ast.Attribute) else "")
            if called in _IDENTITY_CALLS:
                return True
        if isinstance(sub, ast.Attribute) and sub.attr in ("_version", "_cdata"):
            return True
        if isinstance(sub, ast.Name) and sub.id in names:
            up = parents.get(sub)
            if isinstance(up, ast.Attribute) and up.value is sub:
                call = parents.get(up)
                if up.attr in _META_ATTRS or (up.attr in _META_METHODS and isinstance(call, ast.Call) and call.func is up):
                    continue
            if isinstance(up, ast.Call) and sub in up.args and (a.dotted(up.func) or "") in _META_FUNCTIONS:
                continue
            return True
    return False


def _is_container(a: _Analyzer, node) -> bool:
    """self.<attr>[...] or a module-level name: storage that outlives the call (not a local output)."""
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self") \
        or isinstance(node, ast.Name) and (node.id.isupper() or node.id in a.module_names)


def _may_return(stmt: ast.stmt) -> bool:
    """Whether a statement holds a ``return`` of the function it is in (not of a nested one)."""
    todo = [stmt]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Return):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def _conditional_nodes(functions: Iterable[ast.AST]) -> Set[int]:
    """Ids of the nodes inside the branches of ``if`` statements and conditional expressions (not
    their tests, which always run), and of the statements after an ``if`` that may return: the
    implicit else of ``if x.is_cuda: return kernel(x)`` followed by a fallback."""
    out: Set[int] = set()
    for fn in functions:
        for node in ast.walk(fn):
            if isinstance(node, ast.If):
                parts = node.body + node.orelse
            elif isinstance(node, ast.IfExp):
                parts = [node.body, node.orelse]
            else:
                parts = []
            for part in parts:
                out.update(id(n) for n in ast.walk(part))
            for field in ("body", "orelse", "finalbody"):
                block = getattr(node, field, None)
                if not isinstance(block, list):
                    continue
                guard = next((i for i, st in enumerate(block) if isinstance(st, ast.If) and _may_return(st)), None)
                if guard is not None:
                    for st in block[guard + 1:]:
                        out.update(id(n) for n in ast.walk(st))
    return out


def _branch_only_nodes(a: _Analyzer, tree: ast.Module, runtime: List[ast.AST], model_class: str) -> Set[int]:
    """Ids of the nodes of runtime functions reached only from inside conditional branches (a fallback
    method called as ``if not ok: return self._reference(x)``): what they compute is judged like the
    branch that calls them. A function counts as reached unconditionally when ``forward`` or a special
    method is it, or when it is named (called, passed as a hook, stored) anywhere else than inside a
    branch: in another unconditionally reached function, in ``__init__``, at module level."""
    names = {fn.name for fn in runtime}
    cls = a.classes.get(model_class)
    reached = {"forward"} | {fn.name for fn in runtime if fn.name.startswith("__") and fn.name.endswith("__")}
    if cls is None:
        return set()

    def named(node) -> Optional[str]:
        if isinstance(node, ast.Name) and node.id in names:
            return node.id
        if isinstance(node, ast.Attribute) and node.attr in names:
            return node.attr
        return None

    inside_runtime = {id(n) for fn in runtime for n in ast.walk(fn)}
    reached |= {named(n) for n in ast.walk(tree) if id(n) not in inside_runtime and named(n)}
    conditional = _conditional_nodes(runtime)
    grew = True
    while grew:
        grew = False
        for fn in runtime:
            if fn.name not in reached:
                continue
            for n in ast.walk(fn):
                name = named(n)
                if name and name not in reached and id(n) not in conditional:
                    reached.add(name)
                    grew = True
    return {id(n) for fn in runtime if fn.name not in reached for n in ast.walk(fn)}


def _reference_fallback(a: _Analyzer, functions: Iterable[ast.AST], reference_ops: Set[str]) -> None:
    for fn in functions:
        for node in ast.walk(fn):
            if not isinstance(node, ast.Try):
                continue
            handled = list(node.handlers) + list(node.orelse) + list(node.finalbody)
            body_ops = torch_computations(a, handled)
            if body_ops:
                op = sorted(body_ops)[0]
                a.add("reference_fallback", "fail", node,
                      f"an exception handler computes with PyTorch ({', '.join(sorted(body_ops))}): when the kernel "
                      f"fails, the reference's result is returned instead (line {body_ops[op]})")
            for h in node.handlers:
                if h.type is None or (isinstance(h.type, ast.Name) and h.type.id in ("Exception", "BaseException")):
                    if any(isinstance(s, ast.Pass) for s in h.body):
                        a.add("reference_fallback", "warn", h, "a broad except silently swallows kernel errors")


def run(candidate_source: str, reference_source: Optional[str], allowed_calls: Iterable[str],
        model_class: str = "ModelNew", tree: Optional[ast.Module] = None,
        kernel_loops: Iterable[str] = (), kernel_modules: Iterable[str] = ()) -> List[dict]:
    """Every check's verdict on the candidate, worst finding first within each check. ``tree``: the
    candidate already parsed. ``kernel_loops``: the target's functions whose for-loops are device
    code; ``kernel_modules``: its kernel toolchain's modules (both from target.toml's [checks]).
    Untrusted sources go through static_limits.run_isolated."""
    allowed = ops.canonical_set(allowed_calls)
    tree = tree if tree is not None else ast.parse(candidate_source)
    a = _Analyzer(kernel_modules)
    a.collect(tree)
    a.check_everywhere(tree)
    runtime = _runtime_functions(a, model_class)
    reference_ops = reference_computations(reference_source) if reference_source else set()
    kernel_bodies = _kernel_loop_bodies(a, runtime, set(kernel_loops))
    branches = _conditional_nodes(runtime) | _branch_only_nodes(a, tree, runtime, model_class)
    cand_ops = torch_computations(a, runtime, skip=kernel_bodies | branches)
    found = ops.delegation(reference_ops, set(cand_ops), allowed)
    if found:
        lines = (sorted(cand_ops[op] for op in cand_ops if op in ops.main_computation(reference_ops))
                 or sorted(cand_ops[op] for op in cand_ops if op not in ops.ARITHMETIC))
        a.findings.append(_Finding("torch_delegation", found[0], lines[0] if lines else 0, found[1]))
    else:
        # PyTorch called only in a branch (a fallback for other devices, dtypes or ranks) is judged by
        # what runs: the run-time check records every operator of the checked calls and rejects the
        # candidate if the branch is taken. Statically it is a warning, not a verdict.
        branch_ops = torch_computations(a, runtime, skip=kernel_bodies)
        found = ops.delegation(reference_ops, set(branch_ops), allowed)
        if found:
            lines = sorted(branch_ops[op] for op in branch_ops if op in ops.main_computation(reference_ops))
            a.findings.append(_Finding("torch_delegation", "warn", lines[0] if lines else 0,
                                       f"in a conditional branch only: {found[1]}; the run-time check rejects it "
                                       f"if the branch runs"))
    _import_time_concurrency(a, runtime)
    _reference_fallback(a, runtime, reference_ops)
    _output_caching(a, runtime)
    check_native(a, reference_ops, allowed)
    return _summarize(a.findings)


def _summarize(findings: List[_Finding]) -> List[dict]:
    out = []
    rank = {"fail": 2, "warn": 1, "pass": 0}
    for check in CHECKS:
        mine = [f for f in findings if f.check == check]
        if not mine:
            out.append({"name": f"static.{check}", "verdict": "pass", "message": "nothing found"})
            continue
        mine.sort(key=lambda f: (-rank[f.verdict], f.line))
        verdict = mine[0].verdict
        shown = "; ".join(f"line {f.line}: {f.message}" for f in mine[:4])
        more = f" (and {len(mine) - 4} more)" if len(mine) > 4 else ""
        out.append({"name": f"static.{check}", "verdict": verdict, "message": shown + more,
                    "lines": sorted({f.line for f in mine})})
    return out
