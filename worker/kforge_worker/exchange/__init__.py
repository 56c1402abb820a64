"""Tensors between the reference and the candidate process: host sets as sealed memfds (transport),
device sets as shared device buffers (device_transport over device_buffers), copying and describing
tensors (tensors), the reference's trials (trial_store), and the worker's own GPU kernels that read a
tensor once: its digest (device_digest) and the output check's statistics (device_compare), built by
worker_kernels.

May import: common.
"""
