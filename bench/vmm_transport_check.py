"""GPU check of kforge_worker.exchange.device_buffers: tensors passed between two processes by file descriptor.

The parent plays the trusted reference; the child plays the candidate and runs the way kforge runs
candidates: under bubblewrap in its own PID namespace, as uid 65534 where the parent is root. For each
size the parent draws inputs on the GPU, exports a copy, the child imports a private copy, computes
ReLU, exports its output, and the parent copies it and compares on the GPU. The same round trip through
torch.save files (the transport kforge used before) is timed side by side. Then three hostile replies:
a FIFO instead of an exported allocation, a size larger than the allocation, a shape that does not fit.

    python bench/vmm_transport_check.py [--sizes-mb 64,805,6442] [--repeats 5] [--json OUT]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "worker"))
from kforge_worker.exchange import device_buffers as db  # noqa: E402


def send(sock, msg: dict, fds=()) -> None:
    data = json.dumps(msg).encode()
    socket.send_fds(sock, [len(data).to_bytes(8, "little") + data], list(fds))


def recv(sock) -> tuple:
    head, fds, _, _ = socket.recv_fds(sock, 8, 4)
    n = int.from_bytes(head, "little")
    body = b""
    while len(body) < n:
        chunk, more, _, _ = socket.recv_fds(sock, n - len(body), 4)
        body += chunk
        fds += more
    return json.loads(body), fds


# -- the candidate side --------------------------------------------------------------------------
def child(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    torch.cuda.init()
    while True:
        msg, fds = recv(sock)
        op = msg["op"]
        if op == "quit":
            return
        if op == "whoami":
            send(sock, {"uid": os.getuid(), "pid": os.getpid()})
            continue
        if op == "relu_vmm":
            x = db.import_tensor(fds[0], msg["meta"], 0, copy=True)
            os.close(fds[0])
            y = torch.relu(x)
            buf, meta = db.export_tensor(y)
            send(sock, {"meta": meta}, [buf.fd])
            buf.close()  # the parent holds its own reference to the allocation through the descriptor
            continue
        if op == "relu_file":
            x = torch.load(msg["path"], weights_only=True).cuda()
            y = torch.relu(x)
            out = msg["path"] + ".out"
            torch.save(y.cpu(), out)
            send(sock, {"path": out})
            continue
        if op == "fifo":
            path = os.path.join(msg["dir"], "fifo")
            os.mkfifo(path)
            r = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            send(sock, {"meta": {"dtype": "float32", "shape": [4], "nbytes": 16}}, [r])
            os.close(r)
            continue
        if op in ("oversize", "misshape"):
            buf, meta = db.export_tensor(torch.ones(1024, device="cuda"))
            if op == "oversize":
                meta = {**meta, "nbytes": 1 << 40, "shape": [1 << 38]}
            else:
                meta = {**meta, "shape": [4096]}
            send(sock, {"meta": meta}, [buf.fd])
            buf.close()
            continue


# -- the reference side --------------------------------------------------------------------------
def sandboxed(cmd: list, work: str) -> list:
    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise SystemExit("bubblewrap (bwrap) is needed: the point is to cross a PID namespace")
    wrap = [bwrap, "--ro-bind", "/", "/", "--dev-bind", "/dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
            "--bind", work, work, "--unshare-pid", "--unshare-ipc", "--die-with-parent"]
    if os.getuid() == 0 and shutil.which("setpriv"):
        wrap += ["setpriv", "--reuid", "65534", "--regid", "65534", "--clear-groups"]
    return wrap + cmd


def timed(fn, repeats: int) -> tuple:
    samples = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        result = fn()
        torch.cuda.synchronize()
        samples.append(time.perf_counter() - t0)
    return result, samples


def summary(samples: list) -> dict:
    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
    return {"median_s": statistics.median(samples), "p25_s": q[0], "p75_s": q[2], "n": len(samples)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes-mb", default="64,805,6442")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        return child(args.child)
    if not torch.cuda.is_available():
        raise SystemExit("no CUDA GPU: this check needs one")

    # The file transport's folder: the only place the child may write besides its own /tmp.
    work = tempfile.mkdtemp(prefix="vmm-check-", dir=os.getcwd())
    os.chmod(work, 0o777)
    parent_sock, child_sock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    cmd = sandboxed([sys.executable, os.path.abspath(__file__), "--child", str(child_sock.fileno())], work)
    proc = subprocess.Popen(cmd, pass_fds=[child_sock.fileno()])
    child_sock.close()
    report = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "sandbox": cmd[:cmd.index(sys.executable)]}
    send(parent_sock, {"op": "whoami"})
    who, _ = recv(parent_sock)
    report["child"] = who
    report["parent"] = {"uid": os.getuid(), "pid": os.getpid()}
    print(f"device {report['device']}; child pid {who['pid']} (own namespace), uid {who['uid']}", flush=True)

    rows = []
    for mb in [int(s) for s in args.sizes_mb.split(",")]:
        n = mb * (1 << 20) // 4
        x = torch.rand(n, device="cuda") - 0.5
        expected = torch.relu(x)

        def vmm_round():
            buf, meta = db.export_tensor(x)
            send(parent_sock, {"op": "relu_vmm", "meta": meta}, [buf.fd])
            buf.close()  # the child maps its own copy; this side never reads the buffer again
            reply, fds = recv(parent_sock)
            y = db.import_tensor(fds[0], reply["meta"], 0, copy=True)
            os.close(fds[0])
            return bool(torch.equal(y, expected))

        def file_round():
            path = os.path.join(work, "inputs.pt")
            torch.save(x.cpu(), path)
            os.chmod(path, 0o644)
            send(parent_sock, {"op": "relu_file", "path": path})
            reply, _ = recv(parent_sock)
            y = torch.load(reply["path"], weights_only=True).cuda()
            return bool(torch.equal(y, expected))

        ok_vmm, t_vmm = timed(vmm_round, args.repeats)
        ok_file, t_file = timed(file_round, min(args.repeats, 3))  # seconds each at GB sizes
        _, t_floor = timed(lambda: bool(torch.equal(torch.relu(x.clone()), expected)), args.repeats)
        row = {"size_mb": mb, "vmm": {**summary(t_vmm), "correct": ok_vmm},
               "file": {**summary(t_file), "correct": ok_file}, "in_process": summary(t_floor)}
        rows.append(row)
        print(f"{mb:>6} MB  fd transport {row['vmm']['median_s'] * 1e3:8.1f} ms ({'ok' if ok_vmm else 'WRONG'})  "
              f"files {row['file']['median_s'] * 1e3:8.1f} ms ({'ok' if ok_file else 'WRONG'})  "
              f"in one process {row['in_process']['median_s'] * 1e3:7.1f} ms", flush=True)
        del x, expected
        torch.cuda.empty_cache()
    report["rows"] = rows

    hostile = {}
    for op in ("fifo", "oversize", "misshape"):
        send(parent_sock, {"op": op, "dir": work})
        reply, fds = recv(parent_sock)
        t0 = time.perf_counter()
        try:
            db.import_tensor(fds[0], reply["meta"], 0, copy=True)
            hostile[op] = "ACCEPTED"
        except db.DeviceBufferError as e:
            hostile[op] = f"refused: {e}"
        finally:
            os.close(fds[0])
        print(f"hostile {op}: {hostile[op]} ({(time.perf_counter() - t0) * 1e3:.1f} ms)", flush=True)
    report["hostile"] = hostile
    send(parent_sock, {"op": "quit"})
    proc.wait(timeout=60)
    shutil.rmtree(work, ignore_errors=True)
    ok = all(r["vmm"]["correct"] for r in rows) and all(v.startswith("refused") for v in hostile.values())
    report["ok"] = ok
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    print("OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
