"""load_inline's C++ compiler in kforge's builder: runs the real one (KFORGE_REAL_CXX: $CXX as torch
would run it, else c++) as asked, with ``-include`` of kforge's precompiled torch/extension.h in front where one was made for
exactly this command (build_pch.torch_extension_flags). Reached through bin/kforge-g++, the name
torch accepts as a GCC. Standard library only."""

import os
import shlex
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build_pch  # noqa: E402  (by file: the sandbox runs this as a script)


def main(args: list) -> None:
    real = shlex.split(os.environ.get("KFORGE_REAL_CXX") or "c++")  # $CXX may be a launcher and a compiler
    extra = build_pch.torch_extension_flags([*real, *args])
    os.execvp(real[0], [*real, *extra, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
