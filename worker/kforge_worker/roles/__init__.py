"""What a worker process is for: the two sides of an evaluation (reference: trusted, builds the
reference, draws inputs, checks and times; candidate: untrusted, imports and runs the candidate) and
the one-shot commands of ``python -m kforge_worker`` (baseline, describe, compile_only).

May import: common, backends, exchange, measure, checks.
"""
