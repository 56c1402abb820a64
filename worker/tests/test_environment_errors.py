"""What the machine lacks is reported as an environment problem, not as the problem's or the
candidate's fault."""

import pytest
import torch

from kforge_worker.common import protocol, session
from kforge_worker.common.errors import EnvironmentProblem, ProblemError


def test_environment_problem_has_its_own_kind():
    assert protocol.error_reply(EnvironmentProblem("no GPU"))["error"]["kind"] == "environment_error"
    assert protocol.error_reply(ProblemError("bad reference"))["error"]["kind"] == "problem_error"
    assert protocol.error_reply(RuntimeError("boom"))["error"]["kind"] == "runtime_error"


def test_a_gpu_device_without_a_gpu_is_an_environment_problem():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(EnvironmentProblem, match="sees no GPU"):
        session.setup("cuda:0", 1)


def test_a_set_mistake_travels_without_a_traceback():
    from kforge_worker.common.errors import OverrideError
    reply = protocol.error_reply(OverrideError("--set nosuch: not a top-level assignment in p.py"))
    assert reply["error"]["kind"] == "problem_error" and reply["error"]["traceback"] == ""
    assert "ProblemError: bad reference" in protocol.error_reply(ProblemError("bad reference"))["error"]["traceback"]
