"""worker_kernels.WorkerModule: where its module cannot be built or run, it says why and the caller's
operator path takes over (here: no GPU to build for)."""

import pytest
import torch

from kforge_worker.exchange import device_digest, tensors, worker_kernels


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the machine without a GPU")
def test_a_module_that_cannot_be_built_here_keeps_the_reason_and_launches_nothing():
    module = worker_kernels.WorkerModule('extern "C" __global__ void k() {}', "kforge_test_module")
    assert not module.usable(torch.device("cuda"))
    assert module.unavailable  # the reason, e.g. no CUDA device to take the architecture from
    assert module.launch("k", torch.device("cuda"), 1, 32, ()) is False


def test_host_tensors_never_reach_the_digest_kernel():
    x = torch.arange(5000, dtype=torch.int32)
    assert device_digest.sums(x.view(torch.int8), tensors._weights(tensors._DIGEST_ROW, x.device)) is None
    assert tensors.digest([x]) == tensors.digest([x.clone()])
