"""Compatibility name: the kernel libraries live in kforge_kernels. Candidates, transcripts and
standalone files written before that package existed say ``from kforge_worker import <library>``;
this module makes that name the kforge_kernels module of the same name (the same module object, not
a copy), so both spellings share one build cache, one set of loaded kernels and one CompileError."""

import importlib
import sys

sys.modules[__name__] = importlib.import_module("kforge_kernels." + __name__.rpartition(".")[2])
