import time

import pytest

from kforge_worker.checks import static_checks, static_limits
from kforge_worker.common.errors import ProblemError

PROBLEM = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return torch.relu(x)
"""
HONEST = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
"""


@pytest.fixture
def files(tmp_path):
    problem = tmp_path / "problem.py"
    problem.write_text(PROBLEM)

    def write(source, name="candidate.py"):
        path = tmp_path / name
        path.write_text(source)
        return str(path), str(problem)

    return write


def _only(reply):
    assert len(reply["checks"]) == 1, reply
    return reply["checks"][0]


def test_honest_source_gets_every_static_check(files):
    reply = static_limits.run_isolated(*files(HONEST), [])
    names = {c["name"] for c in reply["checks"]}
    assert names == {f"static.{c}" for c in static_checks.CHECKS}


def test_nesting_beyond_the_parser_is_a_limit_not_a_crash(files):
    chain = "+".join(["x"] * 5000)  # RecursionError inside ast.parse itself
    check = _only(static_limits.run_isolated(*files(HONEST + f"\ny = {chain}\n"), []))
    assert (check["name"], check["verdict"]) == ("static_limits", "fail")
    assert "nested too deeply" in check["message"]


def test_nesting_deeper_than_the_stated_limit_is_refused(files):
    chain = "+".join(["x"] * 300)  # parses, but 300 levels deep
    check = _only(static_limits.run_isolated(*files(HONEST + f"\ny = {chain}\n"), []))
    assert check["name"] == "static_limits" and "levels deep" in check["message"]


def test_source_larger_than_the_limit_is_refused_before_any_parsing(files):
    big = HONEST + "#" + "x" * static_limits.MAX_SOURCE_BYTES + "\n"
    check = _only(static_limits.run_isolated(*files(big), []))
    assert check["name"] == "static_limits" and "256 KiB" in check["message"]


def test_checks_past_the_time_limit_are_refused(files):
    check = _only(static_limits.run_isolated(*files(HONEST), [], time_limit_s=0.001))
    assert check["name"] == "static_limits" and "did not finish" in check["message"]


def test_a_crashing_check_is_a_check_error_with_its_log(tmp_path, files):
    _, problem = files(HONEST)
    folder = tmp_path / "not_a_file.py"
    folder.mkdir()  # the child cannot read it: it fails with a traceback
    check = _only(static_limits.run_isolated(str(folder), problem, []))
    assert check["name"] == "check_error" and "IsADirectoryError" in check["log"]


def test_a_broken_problem_is_still_the_problem_s_fault(tmp_path, files):
    candidate, problem = files(HONEST)
    (tmp_path / "problem.py").write_text("def broken(:\n")
    with pytest.raises(ProblemError):
        static_limits.run_isolated(candidate, problem, [])


def test_syntax_errors_are_reported_as_before(files):
    reply = static_limits.run_isolated(*files("def f(:\n"), [])
    assert reply["checks"] == [] and "line 1" in reply["syntax_error"]


def test_tree_depth_counts_levels_without_recursion():
    import ast

    assert static_limits.tree_depth(ast.parse("x")) == 4  # Module, Expr, Name, Load
    deep = ast.parse("y = " + "+".join(["x"] * 900))
    assert static_limits.tree_depth(deep) > 900


@pytest.mark.parametrize("pattern", ["\n \n", "'", '"', "/*", "\\"])
def test_cpp_tokeniser_is_linear_on_pathological_text(pattern):
    # The old tokeniser took about 40 s on 180 KB of blank lines; linear, this is well under a second.
    source = 'extern "C" void f() { g(); }\n' + pattern * (200_000 // len(pattern))
    start = time.perf_counter()
    calls = static_checks.cpp_calls(source)
    assert time.perf_counter() - start < 10
    assert ("", "g") in calls
