"""Prints the `--set NAME=VALUE` arguments of one problem from bench/gpu_sizes.toml (one per line),
or with --list the problems it sizes."""

import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

TABLE = Path(__file__).with_name("gpu_sizes.toml")


def sizes() -> dict:
    return tomllib.loads(TABLE.read_text())


def set_args(problem: str) -> list:
    return [f"{k}={v}" for k, v in sizes().get(problem, {}).items()]


if __name__ == "__main__":
    if sys.argv[1:] == ["--list"]:
        print("\n".join(sizes()))
    else:
        print("\n".join(set_args(sys.argv[1])))
