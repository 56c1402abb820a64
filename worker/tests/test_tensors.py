"""tensors.digest: the fingerprint the device path uses instead of keeping inputs as drawn."""

import torch

from kforge_worker.exchange import tensors


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
    monkeypatch.setattr(tensors, "_DIGEST_ROW", 8)
    monkeypatch.setattr(tensors, "_DIGEST_SLICE_ROWS", 17)
    # 37 rows of 8 bytes and a tail of 4: two slices of 17 rows, then 3 rows and the tail padded
    x = torch.arange(300, dtype=torch.int32).to(torch.uint8)
    changed = {}
    for name, at in (("first slice", 5), ("second slice", 17 * 8 + 3), ("padded rows", 2 * 17 * 8 + 9), ("tail", 298)):
        changed[name] = x.clone()
        changed[name][at] += 1
    assert len({str(tensors.digest([t])) for t in (x, *changed.values())}) == 5
    in_slices = tensors.digest([x])
    monkeypatch.setattr(tensors, "_DIGEST_SLICE_ROWS", 1 << 16)
    assert tensors.digest([x]) == in_slices  # rows count from the tensor's start, not the slice's


def test_a_value_moved_along_a_row_or_down_a_column_changes_the_digest(monkeypatch):
    monkeypatch.setattr(tensors, "_DIGEST_ROW", 16)
    x = torch.arange(1, 17, dtype=torch.int32)  # a 4 x 4 matrix of words, a row of 16 bytes each
    along, down = x.clone(), x.clone()
    along[[0, 1]] = along[[1, 0]]  # swapped within row 0: only the position weights see it
    down[[0, 4]] = down[[4, 0]]  # swapped within column 0: only the row-weighted sums see it
    assert len({str(tensors.digest([t])) for t in (x, along, down)}) == 3


def test_every_byte_position_of_a_row_has_weights_of_its_own():
    weights = tensors._weights(tensors._DIGEST_ROW, torch.device("cpu"))
    assert weights.shape == (tensors._DIGEST_ROW, tensors._WEIGHT_COLUMNS) and bool((weights[:, 0] == 1).all())
    assert len({tuple(r) for r in weights[:, 1:3].tolist()}) == tensors._DIGEST_ROW


def test_the_integer_product_and_its_float64_fallback_agree(monkeypatch):
    x = torch.randint(-128, 128, (40, tensors._DIGEST_ROW), dtype=torch.int8)
    by_product = tensors.digest([x])

    def no_int_mm(*args):
        raise RuntimeError("no _int_mm for this device")

    monkeypatch.setattr(torch, "_int_mm", no_int_mm)
    assert tensors.digest([x]) == by_product


def test_views_that_start_between_words_are_digested():
    base = torch.arange(12, dtype=torch.uint8)
    assert tensors.digest([base[1:9]]) == tensors.digest([base[1:9].clone()])
    halves = torch.arange(12, dtype=torch.float16)
    assert tensors.digest([halves[1:9]]) == tensors.digest([halves[1:9].clone()])
    assert tensors.digest([halves[1:9]]) != tensors.digest([halves[2:10]])


def test_sums_taken_of_a_whole_storage_serve_only_the_tensor_that_is_exactly_its_bytes():
    whole = torch.randn(40, 9)
    key = (whole.untyped_storage().data_ptr(), whole.untyped_storage().nbytes())
    taken = {key: [11] * 10}  # as a copy that digests would have put them
    assert tensors.digest([whole], taken) == [["torch.float32", [40, 9], *[11] * 10]]
    # A view of part of it, or the same bytes in another order, is digested from its own bytes.
    for view in (whole[1:], whole.t(), whole[:, :4]):
        assert tensors.digest([view], taken) == tensors.digest([view])
    assert tensors.digest([whole.clone()], taken) == tensors.digest([whole])
