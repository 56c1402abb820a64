"""tensors.digest: the fingerprint the device path uses instead of keeping inputs as drawn."""

import torch

from kforge_worker import tensors


def test_equal_values_give_equal_digests_in_fresh_storages():
    a = [torch.randn(100, 7), torch.arange(5, dtype=torch.uint8), 3, {"m": torch.tensor([True, False])}]
    b = [a[0].clone(), a[1].clone(), 3, {"m": a[3]["m"].clone()}]
    assert tensors.digest(a) == tensors.digest(b)


def test_a_changed_or_moved_value_changes_the_digest():
    x = torch.randn(64, 33)
    changed = x.clone()
    changed[5, 7] = torch.nextafter(changed[5, 7], torch.tensor(float("inf")))  # one bit
    assert tensors.digest([x]) != tensors.digest([changed])
    assert tensors.digest([x]) != tensors.digest([x.flip(0)])  # same values, other places
    assert tensors.digest([x]) != tensors.digest([x.reshape(33, 64)])  # same bits, other shape


def test_slices_and_odd_byte_counts_are_all_summed(monkeypatch):
    monkeypatch.setattr(tensors, "_DIGEST_ROW", 4)
    monkeypatch.setattr(tensors, "_DIGEST_SLICE", 8)
    x = torch.arange(103, dtype=torch.uint8)  # 25 words in 4 slices of 2 rows, a short row and a tail of 3 bytes
    y = x.clone()
    y[101] += 1  # in the tail
    z = x.clone()
    z[40] += 1  # in a later slice
    assert len({str(tensors.digest([t])) for t in (x, y, z)}) == 3
    in_slices = tensors.digest([x])
    monkeypatch.setattr(tensors, "_DIGEST_SLICE", 1 << 26)
    assert tensors.digest([x]) == in_slices  # positions count from the tensor's start, not the slice's


def test_a_value_moved_along_a_row_or_down_a_column_changes_the_digest(monkeypatch):
    monkeypatch.setattr(tensors, "_DIGEST_ROW", 4)
    x = torch.arange(1, 17, dtype=torch.int32)  # a 4 x 4 matrix of words
    along, down = x.clone(), x.clone()
    along[[0, 1]] = along[[1, 0]]  # swapped within row 0: only the column-weighted sum sees it
    down[[0, 4]] = down[[4, 0]]  # swapped within column 0: only the row-weighted sum sees it
    assert len({str(tensors.digest([t])) for t in (x, along, down)}) == 3


def test_views_that_start_between_words_are_digested():
    base = torch.arange(12, dtype=torch.uint8)
    assert tensors.digest([base[1:9]]) == tensors.digest([base[1:9].clone()])
    halves = torch.arange(12, dtype=torch.float16)
    assert tensors.digest([halves[1:9]]) == tensors.digest([halves[1:9].clone()])
    assert tensors.digest([halves[1:9]]) != tensors.digest([halves[2:10]])
