"""The Ray bridge's own logic, without a cluster (tests/e2e/test_bench_ray.py runs it on a real one)."""

import io
import json
import os
import queue

from kforge_ray import bridge, task


def test_device_units_count_the_targets_device_on_alive_nodes():
    nodes = [{"Alive": True, "Resources": {"CPU": 8, "GPU": 4, "kforge_cpu": 1}},
             {"Alive": True, "Resources": {"CPU": 8, "GPU": 4}},
             {"Alive": False, "Resources": {"GPU": 8, "kforge_cpu": 1}}]
    assert bridge.device_units(nodes, "cuda") == 8
    assert bridge.device_units(nodes, "cpu") == 1
    assert bridge.device_units([{"Alive": True, "Resources": {"CPU": 2}}], "cuda") == 0


class FakeTaskError(Exception):
    """Shaped like ray.exceptions.RayTaskError: the task's own exception is `cause`."""

    def __init__(self, cause):
        super().__init__("ray traceback ...")
        self.cause = cause


def test_a_refusal_is_passed_on_word_for_word_and_other_failures_with_their_kind():
    refused = task.NodeRefused("node h/1a2b3c4d refuses to evaluate: no bubblewrap")
    assert bridge.describe_failure(FakeTaskError(refused)) == str(refused)
    crashed = bridge.describe_failure(RuntimeError("worker died " + "x" * 5000))
    assert crashed.startswith("RuntimeError: worker died") and len(crashed) < 2100


def test_commands_are_read_line_by_line_and_eof_says_stop():
    commands = queue.Queue()
    bridge.read_commands(io.StringIO('{"op": "submit", "id": 1}\n\n{"op": "submit", "id": 2}\n'), commands)
    assert [commands.get_nowait() for _ in range(3)] == [{"op": "submit", "id": 1}, {"op": "submit", "id": 2}, None]


def test_replies_are_one_json_object_per_line(tmp_path):
    r, w = os.pipe()
    replies = bridge.Replies(w)
    replies.send(event="result", id=3, node="h/1a2b3c4d", result={"status": "correct"})
    replies.out.close()
    with os.fdopen(r) as f:
        assert [json.loads(line) for line in f] == [{"event": "result", "id": 3, "node": "h/1a2b3c4d",
                                                     "result": {"status": "correct"}}]


def test_a_node_without_kforge_refuses(monkeypatch, tmp_path):
    monkeypatch.setattr(task, "node_name", lambda: "h/1a2b3c4d")
    try:
        task.evaluate(str(tmp_path / "no-kforge"), {})
    except task.NodeRefused as e:
        assert "no kforge at" in str(e) and "h/1a2b3c4d" in str(e)
    else:
        raise AssertionError("a node without kforge evaluated")
