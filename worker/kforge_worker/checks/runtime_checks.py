"""Runtime checks inside the candidate process: what the candidate's code does while it runs.

Installed by the candidate worker before the candidate is imported. It gathers facts; the trusted
reference process and kforge decide what they mean (reference_checks.py, src/eval/verdict.cc).

* An audit hook (``sys.addaudithook``; Python offers no way to remove one) sees file, network,
  process, frame and gc events however the call was spelled: aliases, ``getattr`` with assembled
  names and ``exec`` all end in the same audited primitives. Events raised while a kernel is being
  built (kforge's kernel libraries, torch.utils.cpp_extension, inductor, the target's kernel
  toolchain named by its [checks] kernel_modules) are the builder's.
* An integrity snapshot of the clocks, torch's copy/save paths and kforge's own worker functions:
  any reassignment is monkey-patching.
* Per forward call: Python threads and child processes left running, outputs that are not plain
  tensors, outputs sharing storage with inputs, outputs still changing after the call returned,
  and the aten operators dispatched (a TorchDispatchMode with a canary that proves it was active).

The state lives in closures bound when the watch is created, so rebinding module attributes later
does not reach it. Known limit: code running in this process can in principle corrupt anything in
it (ctypes writes to memory); these facts raise the cost of cheating, and the decisive checks
(outputs, clocks, speed of light) run outside this process.
"""

import importlib.util
import inspect
import os
import sys
import threading
import time
from typing import List, Optional

import torch
import torch.utils._pytree as pytree
from torch._subclasses.fake_tensor import FakeTensor

import kforge_kernels
from kforge_worker.common import dispatch_mode
from kforge_worker.common import ops as ops_names
from kforge_worker.measure.timed_reps import _leaves, same_bits  # the tensors of a nested output, in one order for both

# kforge_worker's folder (the whole package, not this sub-package) and the folder holding it.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_PACKAGE_PARENT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))

# torch's builders, which any target's candidate may use (load_inline, torch.compile); build_frames()
# adds kforge's kernel libraries and the target's kernel toolchain.
_TORCH_BUILD_FRAMES = ("torch/utils/cpp_extension.py", "torch/_inductor/", "torch/_dynamo/",
                       "torch/utils/_cpp_extension_versioner.py")
_FRAME_HELPERS = ("/inspect.py", "/traceback.py", "/linecache.py")
_READ_OK_PREFIXES = ("/proc/self/", "/sys/", "/dev/null", "/dev/urandom", "/usr/lib/", "/usr/share/", "/lib/",
                     "/etc/ld.so")

_EVENTS = {
    "open": "file_io", "os.listdir": "file_io", "os.scandir": "file_io", "os.remove": "file_io",
    "os.rename": "file_io", "os.rmdir": "file_io", "os.mkdir": "file_io", "os.truncate": "file_io",
    "os.chmod": "file_io", "shutil.copyfile": "file_io", "shutil.rmtree": "file_io", "mmap.__new__": "file_io",
    "glob.glob": "file_io", "os.link": "file_io", "os.symlink": "file_io", "os.utime": "file_io",
    "socket.__new__": "network", "socket.connect": "network", "socket.bind": "network",
    "socket.getaddrinfo": "network", "socket.gethostbyname": "network", "socket.sendto": "network",
    "urllib.Request": "network",
    "subprocess.Popen": "concurrency", "os.system": "concurrency", "os.fork": "concurrency",
    "os.forkpty": "concurrency", "os.posix_spawn": "concurrency", "os.exec": "concurrency",
    "os.spawn": "concurrency", "os.kill": "concurrency", "pty.spawn": "concurrency", "os.startfile": "concurrency",
    "sys._getframe": "introspection", "sys._current_frames": "introspection", "gc.get_objects": "introspection",
    "gc.get_referrers": "introspection", "gc.get_referents": "introspection", "sys.settrace": "introspection",
    "sys.setprofile": "introspection", "sys.addaudithook": "introspection", "ctypes.string_at": "introspection",
    "ctypes.cdata": "introspection", "ctypes.dlopen": "native_loading", "ctypes.dlsym": "native_loading",
    "exec": "dynamic_code", "compile": "dynamic_code", "code.__new__": "dynamic_code",
    "function.__new__": "dynamic_code", "marshal.loads": "dynamic_code",
}
# Events that only count when the candidate's own code raised them (torch uses them internally).
_CALLER_SENSITIVE = {"introspection", "dynamic_code", "native_loading"}


def build_frames(kernel_modules=()) -> tuple:
    """Path fragments of the code whose events are a build's: torch's builders, the kforge_kernels
    package and the folders (or files) of the target's ``kernel_modules`` installed here."""
    frames = list(_TORCH_BUILD_FRAMES) + [os.path.join(os.path.dirname(kforge_kernels.__file__), "")]
    for name in kernel_modules:
        location = _module_location(name)
        if location:
            frames.append(location)
    return tuple(frames)


def _module_location(name: str):
    """A module's folder (for a package) or file, found without importing it; None where absent."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return os.path.join(list(spec.submodule_search_locations)[0], "")
    return spec.origin if spec.origin and os.path.isabs(spec.origin) else None


def _protected_objects() -> dict:
    """Name -> object for everything a cheat would want to replace."""
    import builtins
    import json

    from kforge_worker.common import protocol
    from kforge_worker.exchange import device_transport, tensors, transport
    from kforge_worker.measure import timed_reps, timing

    objs = {}
    for mod, names in [
        (time, ["perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time", "time_ns", "process_time",
                "sleep"]),
        (torch, ["save", "load", "equal", "no_grad", "empty_like", "cat"]),
        (torch.Tensor, ["clone", "detach", "cpu", "copy_", "to", "contiguous", "data_ptr", "untyped_storage",
                        "__torch_function__", "numel", "as_subclass"]),
        (torch.nn.Module, ["__call__", "_call_impl", "state_dict", "eval", "to"]),
        (builtins, ["open", "getattr", "isinstance", "type", "len", "id"]),
        (json, ["dumps", "loads"]),
        (tensors, ["detach_clone", "to_device", "describe"]),
        (transport, ["pack", "pack_set", "unpack", "unpack_set", "check_sealed", "connect"]),
        (transport.Peer, ["get", "put", "_ask"]),
        (device_transport.VmmBackend, ["export", "import_copy", "import_view", "stage", "discard_staged", "_copy", "_fill",
                                        "_refilled", "recycle"]),
        (timing, ["make_timer", "CpuTimer", "CudaTimer"]),
        (timing.CpuTimer, ["measure", "info"]),
        (protocol, ["serve", "error_reply", "_finite", "_open_response_channel"]),
        (timed_reps, ["Block", "write_inputs", "same_bits", "_device_copy", "_leaves", "_plain"]),
        (timed_reps.Block, ["before", "after", "_keep", "facts", "outputs_of", "source"]),
        (torch.cuda, ["synchronize", "Event", "current_stream", "default_stream"]),
        (torch.cuda.Event, ["elapsed_time", "record", "synchronize", "query"]),
        (sys.modules[__name__], ["Watch", "forward_facts", "take_snapshots", "_protected_objects"]),
    ] + [(sys.modules[m], list(names)) for m, names in _DISPATCH_SWITCHES + _THREAD_STARTS if m in sys.modules
         ] + [(sys.modules[m].CudaTimer, ["measure", "info"]) for m in ("kforge_worker.measure.cuda_timing",)
         if m in sys.modules and hasattr(sys.modules[m], "CudaTimer")
         # The candidate role, by name: it imports this module (checks sit below roles) and is loaded
         # before any Watch exists, since it makes them.
         ] + [(sys.modules[m].CandidateSession, ["load_candidate", "run", "prepare_timing", "time", "timing_outputs",
                                                 "timing_inputs_cmd", "handlers", "_fetch"])
              for m in ("kforge_worker.roles.candidate",) if m in sys.modules]:
        for name in names:
            try:
                # The raw attribute: a classmethod read through getattr is a new bound object each time.
                objs[f"{getattr(mod, '__name__', str(mod))}.{name}"] = inspect.getattr_static(mod, name)
            except AttributeError:
                pass
    for name in ("time", "torch", "kforge_worker.measure.timing", "kforge_worker.exchange.tensors",
                 "kforge_worker.exchange.transport", "kforge_worker.exchange.device_transport",
                 "kforge_worker.common.protocol",
                 "kforge_worker.measure.timed_reps",
                 "kforge_worker.roles.candidate", "kforge_worker.checks.runtime_checks", "builtins", "json"):
        objs[f"sys.modules[{name!r}]"] = sys.modules.get(name)
    return objs


def _children() -> set:
    pids = set()
    try:
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                pids.update(f.read().split())
    except OSError:
        pass
    return pids


def _unchanged(t: torch.Tensor, snap: torch.Tensor) -> bool:
    """Whether an output still holds its snapshot's values; a plain tensor beside its snapshot is
    compared in place."""
    if type(t) is torch.Tensor and t.device == snap.device:
        return same_bits(t, snap)
    return torch.equal(_raw_clone(t, snap.device).nan_to_num(), snap.nan_to_num())


def _raw_clone(t: torch.Tensor, device=None):
    """A copy of a tensor's data that never runs a subclass's Python code: on the host, or with
    ``device`` on that device."""
    with torch._C.DisableTorchFunction():
        copy = torch.Tensor.clone(torch.Tensor.detach(t))
        return torch.Tensor.cpu(copy) if device is None else torch.Tensor.to(copy, device)


class _OpRecorder(dispatch_mode.LightDispatchMode):
    """Records the overload packet name of every aten operator dispatched while it is active, in
    ``writes`` (where given) those whose schema writes to an argument (in-place, ``out=``), and in
    ``flops`` (where given) the FLOPs of the GEMM and convolution operators, by library kind
    (ops.flop_kind: the work a target's allowed library calls may do, judged against the reference's)."""

    def __init__(self, ops: set, writes: Optional[set] = None, flops: Optional[dict] = None):
        super().__init__()
        self._ops = ops
        self._writes = writes
        self._flops = flops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _traced_only(args, kwargs):
            return func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if func.namespace not in _TORCH_NAMESPACES and _python_kernel(func.namespace, name):
            name = f"{func.namespace}::{name}"  # a custom operator whose kernel is Python: see ops.custom
        self._ops.add(name)
        if self._writes is not None and func._schema.is_mutable:
            self._writes.add(name)
        out = func(*args, **(kwargs or {}))
        if self._flops is not None and name in _FLOP_OPERATORS:
            kind = ops_names.flop_kind(name)
            if kind:
                self._flops[kind] = self._flops.get(kind, 0) + _library_flops(name, args, out)
        return out


# Namespaces of torch's own operators; any other is a custom operator (torch.library).
_TORCH_NAMESPACES = {"aten", "prims", "_c10d_functional", "c10d", "profiler", "quantized", "rngprims", "debugprims"}
_PYTHON_KERNELS: dict = {}


def _python_kernel(namespace: str, name: str) -> bool:
    """Whether a custom operator has a kernel written in Python (torch.library.custom_op, Library.impl):
    the dispatcher runs it below this recorder, where the torch work it does goes unrecorded. A C++
    kernel's torch calls are read in its source by the static checks."""
    key = f"{namespace}::{name}"
    if key not in _PYTHON_KERNELS:
        try:
            dump = torch._C._dispatch_dump(key)
        except Exception:
            dump = ""
        # Kernels that compute (a Meta or fake kernel, for tracing, runs on no data).
        _PYTHON_KERNELS[key] = any(".py:" in line or "<string>:" in line for line in dump.splitlines()
                                   if ": registered at " in line and not line.startswith(("debug:", "Meta", "Fake")))
    return _PYTHON_KERNELS[key]


_FLOP_OPERATORS = {"mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot", "convolution",
                   "_convolution", "mkldnn_convolution", "convolution_overrideable", "cudnn_convolution",
                   "_slow_conv2d_forward", "_mps_convolution"}


def _library_flops(name: str, args, out) -> int:
    """Multiply-adds times two of a GEMM or convolution operator, from its shapes (the formulas of
    torch.utils.flop_counter, whose import costs the candidate process 0.1 s)."""
    try:
        if name in ("mm", "addmm", "bmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "vdot"):
            a, b = (args[1], args[2]) if name.startswith("add") or name == "baddbmm" else (args[0], args[1])
            inner = a.shape[-1]
            batch = a.shape[0] if name in ("addbmm",) else 1
            return 2 * inner * batch * max(1, out.numel())
        x, w = args[0], args[1]
        transposed = bool(args[6]) if len(args) > 6 and name in ("convolution", "_convolution") else False
        spatial = (x if transposed else out).shape[2:]
        count = x.shape[0] * w.numel() * 2
        for d in spatial:
            count *= d
        return int(count)
    except Exception:
        return 0


def _traced_only(args, kwargs) -> bool:
    """Whether an operator runs on fake or meta tensors only: a compiler tracing the kernel's
    program (Helion at its first call), which computes no value the outputs could come from."""
    tensors = [a for a in pytree.tree_leaves((args, kwargs)) if isinstance(a, torch.Tensor)]
    # Exact types: a subclass could carry real data and compute in its own __torch_dispatch__.
    return bool(tensors) and all(type(t) is FakeTensor or (type(t) in _PLAIN and t.device.type == "meta")
                                 for t in tensors)


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _op_recorder(ops: set, writes: Optional[set] = None, flops: Optional[dict] = None) -> _OpRecorder:
    """An operator recorder (with torch's dynamo guard once torch.compile is in use)."""
    return dispatch_mode.make(_OpRecorder, ops, writes, flops)


class Watch:
    """One per candidate process; created before the candidate module is imported. ``kernel_modules``:
    the target's kernel toolchain ([checks] kernel_modules), whose events are builds."""

    def __init__(self, candidate_path: str, kernel_modules=()):
        self.candidate_path = os.path.realpath(candidate_path)
        frames = build_frames(kernel_modules)
        state = {"active": False, "busy": False, "events": []}
        allowed_roots = tuple({os.path.realpath(p) + "/" for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
                              | {os.path.dirname(os.path.dirname(os.path.realpath(torch.__file__))) + "/",
                                 _PACKAGE_PARENT + "/"})
        cand = self.candidate_path

        def caller_is_candidate() -> bool:
            f = sys._getframe(2)
            while f is not None and (f.f_code.co_filename.endswith(_FRAME_HELPERS)
                                     or f.f_code.co_filename == __file__):
                f = f.f_back
            return f is not None and os.path.realpath(f.f_code.co_filename) == cand

        def building() -> bool:
            f = sys._getframe(2)
            while f is not None:
                name = f.f_code.co_filename
                if any(b in name for b in frames):
                    return True
                f = f.f_back
            return False

        def hook(event, args):
            if not state["active"] or state["busy"]:
                return
            category = _EVENTS.get(event) or ("concurrency" if event.startswith(("os.exec", "os.spawn")) else None)
            if category is None:
                return
            state["busy"] = True
            try:
                if category == "file_io" and event == "open":
                    path = args[0] if args else ""
                    mode = str(args[1]) if len(args) > 1 and args[1] is not None else "r"
                    if isinstance(path, bytes):
                        path = path.decode(errors="replace")
                    if not isinstance(path, str):
                        return  # an fd: opened earlier, already audited
                    real = os.path.realpath(path)
                    writes = any(c in mode for c in "wax+")
                    if not writes and (real.startswith(allowed_roots) or real.startswith(_READ_OK_PREFIXES)):
                        return
                if category in _CALLER_SENSITIVE and not caller_is_candidate():
                    return
                if building():
                    return
                detail = ", ".join(repr(a)[:120] for a in args[:2]) if args else ""
                if len(state["events"]) < 50:
                    state["events"].append([category, f"{event}({detail})"])
            except Exception:
                pass
            finally:
                state["busy"] = False

        sys.addaudithook(hook)
        _watch_dispatch_modes(state, caller_is_candidate)
        _watch_thread_starts(state, building)
        # Threads alive before the candidate was imported are kforge's; any other Python thread that is
        # still alive when a forward call starts was started by the candidate (or its toolchain) at
        # import, construction or an earlier call, and could do torch work the recorder does not see.
        self._threads_at_start = {t.ident for t in threading.enumerate()}
        self._build_frames = frames + (os.path.join(_PACKAGE_DIR, ""),)
        protected = _protected_objects()

        def tampered() -> List[str]:
            now = _protected_objects()
            return sorted(name for name, obj in protected.items() if now.get(name) is not obj)

        def begin():
            state["events"] = []
            state["active"] = True

        def end() -> list:
            state["active"] = False
            return list(state["events"])

        # Bound once: later rebinding of this module's names does not change what the worker calls.
        self._begin, self._end, self._tampered = begin, end, tampered
        self._imports_events = []

    # Import and construction: only the network counts (builds legitimately open files and run g++).
    def begin_import(self):
        self._begin()

    def end_import(self) -> list:
        return [e for e in self._end() if e[0] == "network"]

    # Timed calls: every category counts, as during a correctness run.
    def begin_timing(self):
        self._begin()

    def end_timing(self) -> list:
        return self._end()

    def tampered(self) -> List[str]:
        return self._tampered()

    def forward(self, model, inputs, record_ops: bool, snapshots_on_device: bool = False, meanwhile=None,
                settle: bool = True):
        """Calls the model once under watch; returns (outputs, facts, the outputs' snapshot). The
        snapshot is on the host, or with ``snapshots_on_device`` where each output lies.
        ``meanwhile(snapshots)``, kforge's own work, runs while work the call left running gets its
        time to show up (SETTLE_S; with ``settle`` false, none), outside the watched window."""
        threads_before = {t.ident for t in threading.enumerate()}
        running = self._candidate_threads()
        children_before = _children()
        ops: set = set()
        flops: dict = {}
        self._begin()
        try:
            with torch.no_grad():
                if record_ops:
                    with _op_recorder(ops, flops=flops):
                        outputs = model(*inputs)
                        torch.empty(1).zero_()  # canary: proves the recorder was still in place
                else:
                    outputs = model(*inputs)
            # At once, and with no device-wide synchronize first: the snapshot is copied on the current
            # stream, in the order a caller would read the outputs, so work left on a side stream the
            # current stream never waited for shows up as unfinished outputs (and as outputs that change
            # afterwards). Any bookkeeping before it would give such work time to finish.
            snapshots = take_snapshots(outputs, snapshots_on_device)
            settled = time.monotonic() + (SETTLE_S if settle else 0.0)
        finally:
            events = self._end()
        if meanwhile is not None:
            meanwhile(snapshots)
        facts = forward_facts(outputs, snapshots, inputs, events, threads_before, children_before, ops, record_ops,
                              self._tampered(), settled)
        if record_ops:
            facts["library_flops"] = flops
        facts["running_threads"] = running
        return outputs, facts, rebuild(outputs, iter(snapshots))

    def _candidate_threads(self) -> List[str]:
        """Names of the live Python threads the candidate started before this call: not there when
        the watch was made, and not running a builder's code (a toolchain's own worker threads)."""
        out = []
        for t in threading.enumerate():
            if t.ident in self._threads_at_start or not t.is_alive():
                continue
            target = getattr(t, "_target", None)
            target = getattr(target, "func", target)  # functools.partial
            if target is None and type(t).run is not threading.Thread.run:
                target = type(t).run  # a Thread subclass: its own run method is what it runs
            code = getattr(target, "__code__", None)
            if code is not None and any(f in code.co_filename for f in self._build_frames + _runtime_dirs()):
                continue
            out.append(t.name)
        return out


def _runtime_dirs() -> tuple:
    """Folders of device runtimes whose own threads are not the candidate's: each kernel library
    (kforge_kernels) the candidate imported names its runtime's packages in RUNTIME_THREAD_PACKAGES
    (a poller that waits on a GPU queue runs none of the candidate's code)."""
    out = ()
    for name, library in list(sys.modules.items()):
        if not name.startswith("kforge_kernels.") or library is None:
            continue
        for package in getattr(library, "RUNTIME_THREAD_PACKAGES", ()):
            module = sys.modules.get(package)
            if module is not None and getattr(module, "__file__", None):
                out += (os.path.join(os.path.dirname(os.path.abspath(module.__file__)), ""),)
    return out


# How long after the snapshot the outputs are looked at again: work the call left running (a side
# stream, a host thread) has this long to show up as outputs that changed. Only a host thread needs
# the wait (every stream's work is waited for anyway), and only to be reported as what it is: the
# snapshot taken at the return is what gets checked, so a write that lands later fails the trial as
# incorrect when nothing waited for it. The first trial of each size waits (src/eval/correctness.cc).
SETTLE_S = 0.02


# The dispatch-mode stack's switches (torch.utils._python_dispatch, torch._C): a candidate that calls
# one pops kforge's operator recorder off the stack, or runs work beneath it. Each is wrapped so that a
# call from the candidate's own code is an introspection event (the static check names the spellings).
_DISPATCH_SWITCHES = (
    ("torch.utils._python_dispatch", ("_disable_current_modes", "_pop_mode", "_pop_mode_temporarily", "_push_mode",
                                      "_get_current_dispatch_mode_stack")),
    ("torch._C", ("_unset_dispatch_mode", "_set_dispatch_mode", "_pop_torch_dispatch_stack",
                  "_push_on_torch_dispatch_stack", "_get_dispatch_stack_at",
                  # The thread's dispatch keys: excluding the Python key skips every dispatch mode.
                  "ExcludeDispatchKeyGuard", "_ExcludeDispatchKeyGuard", "_IncludeDispatchKeyGuard",
                  "_ForceDispatchKeyGuard", "_PreserveDispatchKeyGuard", "_SetExcludeDispatchKeyGuard",
                  "_RestorePythonTLSSnapshot", "_DisableTorchDispatch", "_DisableFuncTorch",
                  "_dispatch_tls_set_dispatch_key_excluded", "_dispatch_tls_set_dispatch_key_included")),
)


def _watch_dispatch_modes(state: dict, caller_is_candidate) -> None:
    """Wraps each switch, and every alias torch's own modules bound to it when torch was imported
    (torch.utils._mode_utils.no_dispatch is torch._C._DisableTorchDispatch)."""
    import functools

    wrappers = {}
    for module_name, names in _DISPATCH_SWITCHES:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        for name in names:
            original = getattr(module, name, None)
            if original is None or getattr(original, "_kforge_watched", False):
                continue

            def watched(*args, _original=original, _name=f"{module_name}.{name}", **kwargs):
                if state["active"] and not state["busy"] and len(state["events"]) < 50:
                    state["busy"] = True
                    try:
                        if caller_is_candidate():
                            state["events"].append(["introspection", f"{_name}() (the dispatch-mode stack or the "
                                                                     f"dispatch keys, which kforge's operator "
                                                                     f"recorder relies on)"])
                    finally:
                        state["busy"] = False
                return _original(*args, **kwargs)

            if callable(original) and not isinstance(original, type):
                watched = functools.wraps(original)(watched)
            watched._kforge_watched = True
            setattr(module, name, watched)
            wrappers[id(original)] = (original, watched)
    for module_name, module in list(sys.modules.items()):
        if not module_name.startswith("torch") or module is None:
            continue
        try:
            items = list(vars(module).items())
        except TypeError:
            continue
        for name, value in items:
            found = wrappers.get(id(value))
            if found is not None and found[0] is value:
                setattr(module, name, found[1])


# Where Python starts a thread: no audit event says so, and a thread started and joined within forward
# leaves nothing running afterwards, yet the operator recorder never saw its torch work.
_THREAD_STARTS = (("_thread", ("start_new_thread", "start_joinable_thread")),
                  ("threading", ("_start_new_thread", "_start_joinable_thread")))


def _watch_thread_starts(state: dict, building) -> None:
    import functools

    for module_name, names in _THREAD_STARTS:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        for name in names:
            original = getattr(module, name, None)
            if original is None or getattr(original, "_kforge_watched", False):
                continue

            def watched(*args, _original=original, **kwargs):
                if state["active"] and not state["busy"] and len(state["events"]) < 50:
                    state["busy"] = True
                    try:
                        if not building():
                            state["events"].append(["concurrency", "started a thread (torch work on it escapes the "
                                                                   "operator recorder)"])
                    finally:
                        state["busy"] = False
                return _original(*args, **kwargs)

            watched = functools.wraps(original)(watched)
            watched._kforge_watched = True
            setattr(module, name, watched)


def ready_device(device: torch.device) -> None:
    """The snapshot of an output and the comparison with it, once per common floating dtype on
    ``device``, for a worker's warm-up: CUDA loads a kernel at its first launch in a process, and
    that took the first trial's comparison 60 ms on an H200."""
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64):
        t = torch.zeros(4, dtype=dtype, device=device)
        _unchanged(t, take_snapshots([t], on_device=True)[0])


def take_snapshots(outputs, on_device: bool = False) -> list:
    """A copy of every output tensor (None where one cannot be copied), in _leaves() order: on the
    host, or with ``on_device`` beside the output (a copy on the current stream, like the host one)."""
    snapshots = []
    for t in _leaves(outputs):
        try:
            snapshots.append(_raw_clone(t, t.device if on_device else None))
        except Exception:
            snapshots.append(None)
    return snapshots


def forward_facts(outputs, snapshots, inputs, events, threads_before, children_before, ops, record_ops,
                  tampered, settled: float) -> dict:
    leaves = _leaves(outputs)
    plain = [type(t) is torch.Tensor or type(t) is torch.nn.Parameter for t in leaves]
    types = [type(t).__module__ + "." + type(t).__qualname__ for t in leaves]
    meta = any(t.device.type == "meta" for t in leaves)
    input_storages = set()
    for t in _leaves(list(inputs)):
        try:
            if t.numel():
                input_storages.add(t.untyped_storage().data_ptr())
        except Exception:
            pass
    aliases = []
    for t in leaves:
        try:
            aliases.append(bool(t.numel()) and t.untyped_storage().data_ptr() in input_storages)
        except Exception:
            aliases.append(False)
    # Work left running after the call returned shows up as outputs that keep changing.
    time.sleep(max(0.0, settled - time.monotonic()))
    if torch.cuda.is_initialized():
        torch.cuda.synchronize()  # now every stream's work is done: the final state of the outputs
    deferred = False
    for t, snap in zip(leaves, snapshots):
        try:
            if snap is not None and not _unchanged(t, snap):
                deferred = True
        except Exception:
            pass
    threads = [t.name for t in threading.enumerate() if t.ident not in threads_before and t.is_alive()]
    children = sorted(_children() - children_before)
    facts = {
        "output_types": types, "plain_tensors": all(plain) and not meta, "output_is_tensor": bool(leaves),
        "aliases_inputs": aliases, "deferred": deferred, "events": events, "new_threads": threads,
        "children": children, "tampered": tampered, "precision_flags": precision_flags(),
    }
    if record_ops:
        facts["aten_ops"] = sorted(ops)
        facts["ops_recorded"] = "zero_" in ops
    return facts


def precision_flags() -> dict:
    """The process-wide switches that let library GEMMs and convolutions round fp32 inputs to TF32."""
    return {"cuda_matmul_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
            "cudnn_tf32": bool(torch.backends.cudnn.allow_tf32),
            "float32_matmul_precision": torch.get_float32_matmul_precision()}


def rebuild(obj, snapshots):
    """``obj`` with each tensor replaced by its snapshot (taken right after the call returned)."""
    if isinstance(obj, torch.Tensor):
        snap = next(snapshots)
        return snap if snap is not None else obj
    if isinstance(obj, (list, tuple)):
        return type(obj)(rebuild(x, snapshots) for x in obj)
    if isinstance(obj, dict):
        return {k: rebuild(v, snapshots) for k, v in obj.items()}
    return obj
