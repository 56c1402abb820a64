"""Reading what a candidate wrote: only regular files, never through a link, never blocking."""

import os

import pytest
import torch

from kforge_worker import tensors


def test_a_regular_file_is_read(tmp_path):
    path = tmp_path / "out.pt"
    tensors.save({"outputs": [torch.ones(3)]}, str(path))
    assert torch.equal(tensors.load_untrusted(str(path))["outputs"][0], torch.ones(3))


def test_a_link_to_a_host_file_is_refused(tmp_path):
    secret = tmp_path / "secret.pt"
    tensors.save({"outputs": [torch.zeros(1)]}, str(secret))
    link = tmp_path / "out.pt"
    link.symlink_to(secret)
    with pytest.raises(OSError):
        tensors.load_untrusted(str(link))


def test_a_fifo_does_not_block_the_reader(tmp_path):
    fifo = tmp_path / "out.pt"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        tensors.load_untrusted(str(fifo))
