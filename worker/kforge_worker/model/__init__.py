"""`kforge model`: a user's whole model cut into regions, each region a KernelBench problem, and the
regions' best kernels installed back into the model, verified and measured end to end (docs/model.md).

The model file is the user's own code: it runs in this process, as a reference problem does, but
the kernels installed into it are candidates and run only in a separate process (end_to_end.py).

May import: common, backends, exchange, measure, checks, roles.
"""
