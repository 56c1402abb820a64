"""What a CPU kernel's author needs beyond its model name: the vector instruction sets the compiler
can use (`-march=native` picks them) and the cache sizes that blocking should fit. Read from Linux's
/proc/cpuinfo and sysfs; on other systems, or where they are unreadable, the facts are left out."""

import os
from typing import Dict, List

# Flags worth a kernel author's attention, widest first (x86 and Arm names as /proc/cpuinfo lists them).
NOTABLE_FLAGS = ["amx_tile", "amx_bf16", "amx_int8", "avx512f", "avx512bw", "avx512vl", "avx512_bf16", "avx512_fp16",
                 "avx512_vnni", "avx2", "fma", "avx", "sse4_2", "sve2", "sve", "asimd", "neon"]


def isa_flags(cpuinfo: str = "/proc/cpuinfo") -> List[str]:
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("flags", "Features"):
                    present = set(value.split())
                    return [flag for flag in NOTABLE_FLAGS if flag in present]
    except OSError:
        pass
    return []


def _size_bytes(text: str) -> int:
    text = text.strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:].upper(), 1)
    return int(text.rstrip("KkMmGg")) * scale


def _cpu_count(cpu_list: str) -> int:
    count = 0
    for part in cpu_list.strip().split(","):
        if part:
            low, _, high = part.partition("-")
            count += int(high or low) - int(low) + 1
    return count


def caches(cpu_dir: str = "/sys/devices/system/cpu/cpu0/cache") -> List[Dict]:
    """The first CPU's caches: level, type (Data, Instruction, Unified), size and how many CPUs share it."""
    out = []
    try:
        names = sorted(n for n in os.listdir(cpu_dir) if n.startswith("index"))
    except OSError:
        return out
    for name in names:
        read = lambda field: open(os.path.join(cpu_dir, name, field)).read()
        try:
            out.append({"level": int(read("level")), "type": read("type").strip(), "size_bytes": _size_bytes(read("size")),
                        "shared_by": _cpu_count(read("shared_cpu_list"))})
        except (OSError, ValueError):
            continue
    return out


def cpu_facts() -> Dict:
    facts = {}
    flags = isa_flags()
    if flags:
        facts["isa"] = flags
    found = caches()
    if found:
        facts["caches"] = found
    return facts
