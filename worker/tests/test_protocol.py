"""The command channel: which kind each failure is reported as, and the commands every worker answers."""

from kforge_worker.common import protocol


def test_out_of_memory_on_the_host_or_device_is_device_oom():
    cpu = RuntimeError("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: can't allocate memory: "
                       "you tried to allocate 68719476736 bytes. Error code 12 (Cannot allocate memory)")
    assert protocol.error_reply(cpu)["error"]["kind"] == "device_oom"
    assert protocol.error_reply(MemoryError())["error"]["kind"] == "device_oom"
    cuda = RuntimeError("CUDA out of memory. Tried to allocate 320.00 GiB")
    assert protocol.error_reply(cuda)["error"]["kind"] == "device_oom"


def test_other_failures_keep_their_kind():
    assert protocol.error_reply(ValueError("bad shape"))["error"]["kind"] == "runtime_error"
    assert protocol.error_reply(RuntimeError("can't allocate a name"))["error"]["kind"] == "runtime_error"


def test_ping_is_answered_without_a_handler(monkeypatch, tmp_path):
    # kforge times no-op round trips to learn the machine's delay (docs/checks.md, timing_crosscheck).
    import io
    import json
    import os

    replies = tmp_path / "replies"
    fd = os.open(replies, os.O_WRONLY | os.O_CREAT)
    monkeypatch.setenv("KFORGE_RESPONSE_FD", str(fd))
    monkeypatch.setattr("sys.stdin", io.StringIO('{"cmd": "ping", "id": 7}\n{"cmd": "exit", "id": 8}\n'))
    protocol.serve({})
    os.close(fd)
    assert [json.loads(line) for line in replies.read_text().splitlines()] == [{"id": 7, "cmd": "ping", "ok": True}, {"id": 8, "cmd": "exit", "ok": True}]


def test_after_runs_before_each_reply_and_its_failure_fails_the_command(monkeypatch, tmp_path):
    # The workers hand cached device memory back in ``after``: the other process's next command may
    # need it, so it must be done before the reply lets kforge send that command.
    import io
    import json
    import os

    replies = tmp_path / "replies"
    fd = os.open(replies, os.O_WRONLY | os.O_CREAT)
    monkeypatch.setenv("KFORGE_RESPONSE_FD", str(fd))
    monkeypatch.setattr("sys.stdin", io.StringIO('{"cmd": "a", "id": 1}\n{"cmd": "b", "id": 2}\n{"cmd": "exit", "id": 3}\n'))
    seen = []

    def after(cmd, seconds, request):
        assert seconds >= 0 and request["cmd"] == cmd
        seen.append((cmd, replies.read_text().count("\n")))  # replies written so far
        if cmd == "b":
            raise RuntimeError("CUDA error: an illegal memory access was encountered")

    protocol.serve({"a": lambda req: {}, "b": lambda req: {}}, after=after)
    os.close(fd)
    assert seen == [("a", 0), ("b", 1)]
    a, b, _ = [json.loads(line) for line in replies.read_text().splitlines()]
    assert a == {"id": 1, "cmd": "a", "ok": True}
    assert b["ok"] is False and "illegal memory access" in b["error"]["message"]
