"""The cpu target's fast compile path: build, call, persistent cache, errors, concurrent builds."""

import os
import subprocess
import sys
import textwrap

import pytest
import torch

from kforge_kernels import buildinfo, native
from kforge_kernels.errors import CompileError

WORKER_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SRC = r"""
#include <cstdint>
extern "C" void axpy(const float* x, float* y, float a, int64_t n) {
  #pragma omp parallel for simd
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
"""
SIG = {"axpy": [native.PTR, native.PTR, native.F32, native.I64]}

# Child process: load SRC and check the result; prints the build event so the parent can read it.
CHILD = textwrap.dedent("""
    import sys, torch
    from kforge_kernels import buildinfo, native
    src = open(sys.argv[1]).read()
    lib = native.load(src, {"axpy": [native.PTR, native.PTR, native.F32, native.I64]})
    x = torch.arange(1000, dtype=torch.float32); y = torch.ones(1000)
    lib.axpy(native.ptr(x), native.ptr(y), 2.0, x.numel())
    assert torch.equal(y, 1 + 2 * x)
    print("HIT" if buildinfo.events()[-1]["cache_hit"] else "MISS")
""")


@pytest.fixture
def cache(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("KFORGE_BUILD_CACHE", str(d))
    return d


def run_child(tmp_path, env_extra=None):
    src = tmp_path / "src.cpp"
    src.write_text(SRC)
    env = dict(os.environ, PYTHONPATH=WORKER_DIR, **(env_extra or {}))
    return subprocess.Popen([sys.executable, "-c", CHILD, str(src)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def finish(p):
    out, err = p.communicate(timeout=120)
    assert p.returncode == 0, err
    return out.strip()


def test_compile_and_call(cache):
    lib = native.load(SRC, SIG)
    x = torch.randn(10000)
    y = torch.randn(10000)
    want = y + 0.5 * x
    lib.axpy(native.ptr(x), native.ptr(y), 0.5, x.numel())
    assert torch.allclose(y, want)
    ev = buildinfo.events()[-1]
    assert ev["path"] == "native" and ev["cache_hit"] is False
    assert len(list(cache.glob("native/*.so"))) == 1


def test_cache_hit_in_new_process(cache, tmp_path):
    assert finish(run_child(tmp_path)) == "MISS"
    assert finish(run_child(tmp_path)) == "HIT"


def test_cached_rebuild_runs_no_compiler(cache, tmp_path):
    log = tmp_path / "cxx.log"
    wrapper = tmp_path / "cxx-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec g++ "$@"\n')
    wrapper.chmod(0o755)
    env = {"CXX": str(wrapper)}
    assert finish(run_child(tmp_path, env)) == "MISS"
    lines = log.read_text().splitlines()
    assert len([ln for ln in lines if "--version" not in ln]) == 1, lines  # exactly one compile
    log.unlink()
    assert finish(run_child(tmp_path, env)) == "HIT"
    assert not log.exists(), "a cached load ran the compiler"


def test_concurrent_builds_of_one_key(cache, tmp_path):
    # A slow compiler makes both processes miss the cache and build at the same time.
    wrapper = tmp_path / "slow-cxx"
    wrapper.write_text('#!/bin/sh\ncase "$*" in *--version*) ;; *) sleep 1 ;; esac\nexec g++ "$@"\n')
    wrapper.chmod(0o755)
    procs = [run_child(tmp_path, {"CXX": str(wrapper)}) for _ in range(2)]
    assert [finish(p) for p in procs] == ["MISS", "MISS"]
    assert len(list(cache.glob("native/*.so"))) == 1
    assert not list(cache.glob("native/.build-*")), "temp build dirs left behind"


def test_compile_error_has_file_and_line(cache):
    bad = 'extern "C" void f(float* x) {\n  x[0] = undefined_name;\n}\n'
    with pytest.raises(CompileError) as ei:
        native.load(bad, name="broken")
    assert "broken.cpp:2:" in ei.value.log
    assert "undefined_name" in ei.value.log


def test_missing_extern_c_function(cache):
    with pytest.raises(CompileError, match="extern"):
        native.load("void g(float* x) { x[0] = 1; }\n", {"g": [native.PTR]})


def test_ptr_checks():
    with pytest.raises(ValueError, match="not contiguous"):
        native.ptr(torch.randn(4, 5).t())
    with pytest.raises(TypeError, match="dtype"):
        native.ptr(torch.zeros(4, dtype=torch.float64))
    with pytest.raises(TypeError):
        native.ptr([1.0, 2.0])
    t = torch.zeros(3, dtype=torch.int64)
    assert native.ptr(t, dtype=torch.int64).value == t.data_ptr()
    assert native.ptr(t, dtype=None).value == t.data_ptr()


def test_a_miss_inside_the_sandbox_goes_to_kforges_builder(cache, tmp_path, monkeypatch):
    """With a build channel, a miss is asked of the builder (here a fake end of the socket that runs
    the real builder), and the library is loaded from the path it answers."""
    import json
    import socket
    import threading

    ours, theirs = socket.socketpair()
    monkeypatch.setenv("KFORGE_BUILD_FD", str(theirs.fileno()))
    build_dir = tmp_path / "build"
    build_dir.mkdir()
    requests = []

    def broker():
        line = ours.makefile("rb").readline()
        requests.append(json.loads(line))
        msg = {"request": requests[-1], "sandbox": [], "build_dir": str(build_dir)}
        r = subprocess.run([sys.executable, "-m", "kforge_worker.builder.sandboxed_build"], input=json.dumps(msg) + "\n",
                           capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=WORKER_DIR),
                           pass_fds=(1,), timeout=300)
        ours.sendall(r.stdout.encode())

    monkeypatch.setenv("KFORGE_RESPONSE_FD", "1")
    threading.Thread(target=broker, daemon=True).start()
    native._loaded.clear()
    native._build_client._channel.clear()
    src = SRC.replace("axpy", "axpy_brokered")
    lib = native.load(src, {"axpy_brokered": SIG["axpy"]})
    x = torch.arange(10, dtype=torch.float32)
    y = torch.ones(10)
    lib.axpy_brokered(native.ptr(x), native.ptr(y), 2.0, x.numel())
    assert torch.equal(y, 1 + 2 * x)
    assert requests and requests[0]["kind"] == "native" and "key" not in requests[0]
    assert len(list((cache / "native").glob("*.so"))) == 1
    native._build_client._channel.clear()


def test_a_standalone_copy_builds_in_a_private_folder(tmp_path):
    """Inlined into the file `kforge run` writes (no kforge_kernels importable), the helper never loads
    from the shared cache, which candidates of another run could have written."""
    shared = tmp_path / "shared-cache"
    script = textwrap.dedent(f"""
        import os, types
        m = types.ModuleType("standalone_native")
        exec(compile(open({os.path.join(WORKER_DIR, "kforge_kernels", "native.py")!r}).read(), "native.py", "exec"),
             m.__dict__)
        lib = m.load('extern "C" int seven() {{ return 7; }}', {{"seven": []}})
        print(m.cache_dir())
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["KFORGE_BUILD_CACHE"] = str(shared)
    r = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    private = r.stdout.strip().splitlines()[-1]
    assert os.path.basename(private).startswith("kforge-native-")
    assert not os.path.exists(private), "the private build folder outlived its process"
    assert not shared.exists()
