"""Checks device buffers shared by file descriptor (worker/kforge_worker/vmm.py) on a GPU machine:
a trusted process fills a fresh cuMemCreate buffer, sends its descriptor over a Unix socket to a
second process in its own PID namespace (bubblewrap, else unshare, as the candidate's sandbox is),
which maps it, checks it, writes its result into a buffer of its own and sends that back; the first
process maps the result and checks it. Prints what was checked and the time of each step.
    python bench/vmm_transport_check.py [--mb 1024] [--device 0]
Run with the worker's interpreter on the GPU machine; exits 2 with the reason where no GPU is usable."""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "worker"))

import torch  # noqa: E402

from kforge_worker import vmm  # noqa: E402


def isolating_prefix() -> tuple:
    """A command prefix that runs the child in a new PID namespace, and its name."""
    if shutil.which("bwrap") and subprocess.run(["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "true"],
                                                capture_output=True).returncode == 0:
        return ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--die-with-parent"], "bubblewrap --unshare-pid"
    for cmd in (["unshare", "--pid", "--fork"], ["unshare", "--user", "--map-root-user", "--pid", "--fork"]):
        if shutil.which("unshare") and subprocess.run(cmd + ["true"], capture_output=True).returncode == 0:
            return cmd, " ".join(cmd)
    return [], "none (no PID namespace could be made here)"


def child(fd_sock: int, device: int) -> int:
    sock = socket.socket(fileno=fd_sock)
    data, fds, _, _ = socket.recv_fds(sock, 4096, 1)
    meta = json.loads(data)
    t0 = time.perf_counter()
    inputs = vmm.DeviceBuffer.import_fd(fds[0], meta["nbytes"], device)
    os.close(fds[0])
    x = inputs.tensor(torch.float32, [meta["numel"]])
    t1 = time.perf_counter()
    ok = bool(torch.equal(x, torch.arange(meta["numel"], dtype=torch.float32, device=f"cuda:{device}")))
    out = vmm.DeviceBuffer.create(meta["nbytes"], device)
    torch.mul(x, 2, out=out.tensor(torch.float32, [meta["numel"]]))
    torch.cuda.synchronize(device)
    fd = out.export_fd()
    reply = {"inputs_seen": ok, "import_map_s": t1 - t0, "pid_inside": os.getpid()}
    socket.send_fds(sock, [json.dumps(reply).encode()], [fd])
    os.close(fd)
    sock.recv(1)  # the parent has mapped the result: buffers may go
    inputs.close(), out.close()
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=1024.0)
    parser.add_argument("--device", type=int, default=0)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        return child(args.child, args.device)
    why = vmm.available(args.device)
    if why:
        print(f"skipped: {why}")
        return 2
    numel = int(args.mb * 1e6 / 4)
    nbytes = numel * 4
    prefix, isolation = isolating_prefix()
    parent_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    proc = subprocess.Popen(prefix + [sys.executable, __file__, "--child", str(child_end.fileno()),
                                      "--device", str(args.device)], pass_fds=[child_end.fileno()])
    child_end.close()
    t0 = time.perf_counter()
    buf = vmm.DeviceBuffer.create(nbytes, args.device)
    t1 = time.perf_counter()
    buf.tensor(torch.float32, [numel]).copy_(torch.arange(numel, dtype=torch.float32, device=f"cuda:{args.device}"))
    torch.cuda.synchronize(args.device)
    t2 = time.perf_counter()
    fd = buf.export_fd()
    socket.send_fds(parent_end, [json.dumps({"nbytes": nbytes, "numel": numel}).encode()], [fd])
    os.close(fd)
    data, fds, _, _ = socket.recv_fds(parent_end, 4096, 1)
    t3 = time.perf_counter()
    reply = json.loads(data)
    result = vmm.DeviceBuffer.import_fd(fds[0], nbytes, args.device)
    os.close(fds[0])
    got = result.tensor(torch.float32, [numel]).clone()  # the trusted side copies before judging
    t4 = time.perf_counter()
    parent_end.send(b"x")
    proc.wait(timeout=120)
    expected = torch.arange(numel, dtype=torch.float32, device=f"cuda:{args.device}") * 2
    checks = {"child saw the inputs": reply["inputs_seen"], "result is right": bool(torch.equal(got, expected)),
              "child exited 0": proc.returncode == 0,
              "child in its own PID namespace": reply["pid_inside"] <= 2 if prefix else None}
    buf.close(), result.close()
    print(json.dumps({"device": torch.cuda.get_device_name(args.device), "torch": torch.__version__, "mb": args.mb,
                      "isolation": isolation, "checks": checks,
                      "seconds": {"create": t1 - t0, "fill": t2 - t1, "child_round_trip": t3 - t2,
                                  "child_import_map": reply["import_map_s"], "import_map_copy_result": t4 - t3}},
                     indent=1))
    return 0 if all(v is not False for v in checks.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
