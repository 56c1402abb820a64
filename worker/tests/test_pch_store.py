"""pch_store: the precompiled headers' store stays within its budget, least recently used sets first,
never a set this build used or one used in the last minutes."""

import os
import time

from kforge_worker.builder import pch_store

HOUR = 3600.0


def header_folder(base, name: str, nbytes: int, used_hours_ago: float, now: float):
    folder = base / name
    folder.mkdir()
    (folder / "prefix.h.gch").write_bytes(b"\0" * nbytes)
    (folder / "deps.json").write_text("[]")
    os.utime(folder, (now - used_hours_ago * HOUR, now - used_hours_ago * HOUR))
    return folder


def test_the_least_recently_used_sets_go_until_the_rest_fit(tmp_path):
    now = 1_800_000_000.0
    names = {age: f"{age:024x}" for age in (1, 2, 3, 4)}
    for age, name in names.items():
        header_folder(tmp_path, name, 1000, age, now)
    (tmp_path / "lean-aten-0123").mkdir()  # lean_aten's, and the lock files: not headers
    (tmp_path / ".making-0123").write_text("")
    removed = pch_store.evict(str(tmp_path), 2100, now=now)
    assert removed == [names[4], names[3]]  # the oldest first, until 2 of 4 kB remain
    assert sorted(os.listdir(tmp_path)) == sorted([names[1], names[2], "lean-aten-0123", ".making-0123"])
    assert pch_store.evict(str(tmp_path), 2100, now=now) == []


def test_what_this_build_used_and_what_was_used_minutes_ago_stay(tmp_path):
    now = 1_800_000_000.0
    old = header_folder(tmp_path, "a" * 24, 1000, 5, now).name
    header_folder(tmp_path, "b" * 24, 1000, 4, now)
    recent = header_folder(tmp_path, "c" * 24, 1000, 0.05, now).name  # three minutes ago
    assert pch_store.evict(str(tmp_path), 0, keep={old}, now=now) == ["b" * 24]
    assert sorted(os.listdir(tmp_path)) == [old, recent]


def test_a_use_renews_a_set_and_the_budget_comes_from_the_environment(tmp_path, monkeypatch):
    now = time.time()  # mark_used stamps the real time
    header_folder(tmp_path, "a" * 24, 1000, 5, now)
    header_folder(tmp_path, "b" * 24, 1000, 4, now)
    pch_store.mark_used(str(tmp_path), ["a" * 24, "f" * 24])  # one removed meanwhile: nothing to renew
    assert pch_store.evict(str(tmp_path), 1500, now=os.stat(tmp_path / ("a" * 24)).st_mtime + 2 * HOUR) == ["b" * 24]
    monkeypatch.setenv("KFORGE_PCH_MAX_GB", "0.5")
    assert pch_store.budget_bytes() == 1 << 29
    monkeypatch.setenv("KFORGE_PCH_MAX_GB", "lots")
    assert pch_store.budget_bytes() == int(pch_store.DEFAULT_MAX_GB * (1 << 30))
