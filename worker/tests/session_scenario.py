"""Runs a scenario of a reference and a candidate session in one child process.

The candidate session installs an audit hook that cannot be removed again, so the tests that drive
both sessions do it in a child: the problem and candidate sources are written to files, a shared
folder (the evaluation's, where the transport's socket lives) is made, and the scenario prints its
findings as one JSON line last.
"""

import json
import os
import subprocess
import sys


def run(tmp_path, scenario: str, sources: dict, *args: str) -> dict:
    """The JSON the scenario printed last. ``sources`` (name: text) become files whose paths are the
    scenario's first arguments, in order; then the shared folder's path, then ``args``."""
    paths = []
    for name, text in sources.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        paths.append(str(path))
    shared = tmp_path / f"shared-{'-'.join(args) or 'run'}"
    shared.mkdir()
    worker = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([worker, os.path.join(worker, "tests")]),
           "KFORGE_WORKDIR": str(tmp_path)}
    done = subprocess.run([sys.executable, "-c", scenario, *paths, str(shared), *args],
                          capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
