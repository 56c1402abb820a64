"""The CPU facts the generation prompt states: vector instruction sets and caches, read from files
laid out as Linux's /proc/cpuinfo and sysfs are."""

from kforge_worker.backends import cpu_facts


def test_notable_flags_widest_first(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nflags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512bw lm\n\nprocessor\t: 1\n")
    assert cpu_facts.isa_flags(str(cpuinfo)) == ["avx512f", "avx512bw", "avx2", "fma", "avx", "sse4_2"]
    arm = tmp_path / "arm"
    arm.write_text("Features\t: fp asimd sve\n")
    assert cpu_facts.isa_flags(str(arm)) == ["sve", "asimd"]
    assert cpu_facts.isa_flags(str(tmp_path / "missing")) == []


def test_caches_of_the_first_cpu(tmp_path):
    for i, (level, kind, size, shared) in enumerate([(1, "Data", "48K", "0"), (2, "Unified", "2048K", "0"),
                                                     (3, "Unified", "480M", "0-1,4")]):
        d = tmp_path / f"index{i}"
        d.mkdir()
        for name, value in [("level", level), ("type", kind), ("size", size), ("shared_cpu_list", shared)]:
            (d / name).write_text(f"{value}\n")
    assert cpu_facts.caches(str(tmp_path)) == [
        {"level": 1, "type": "Data", "size_bytes": 48 << 10, "shared_by": 1},
        {"level": 2, "type": "Unified", "size_bytes": 2 << 20, "shared_by": 1},
        {"level": 3, "type": "Unified", "size_bytes": 480 << 20, "shared_by": 3}]
    assert cpu_facts.caches(str(tmp_path / "missing")) == []
