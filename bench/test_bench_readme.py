"""bench/README.md's table lists every maintained benchmark: a script added here without a row (or a
row whose script is gone) fails, so the table stays the map of bench/."""
import pathlib
import re

BENCH = pathlib.Path(__file__).resolve().parent


def listed_names(readme: str) -> set:
    """File names the table's rows mention, with `name.{a,b}` spelled out."""
    names = set()
    for row in (line for line in readme.splitlines() if line.startswith("| `")):
        for code in re.findall(r"`([^`]+)`", row.split("|")[1]):
            for word in code.split():
                brace = re.fullmatch(r"([\w./-]+)\.\{([\w,]+)\}", word)
                if brace:
                    names.update(f"{brace[1]}.{ext}" for ext in brace[2].split(","))
                else:
                    names.add(word.rstrip(",").rstrip("/"))
    # Helpers the scripts share, named in the text above the table (`bench/gpu_env.sh`).
    names.update(re.findall(r"`bench/([\w.-]+)`", readme))
    return names


def test_every_benchmark_has_a_row_and_every_row_a_benchmark():
    readme = (BENCH / "README.md").read_text()
    listed = listed_names(readme)
    present = {p.name for p in BENCH.iterdir()
               if p.name not in {"README.md", "results", "__pycache__"} and not p.name.startswith("test_")}
    assert present - listed == set(), f"bench/ files without a row in bench/README.md: {sorted(present - listed)}"
    scripts = {n for n in listed if re.search(r"\.(sh|py|toml|txt)$", n)}
    missing = {n for n in scripts if not (BENCH / n).exists()}
    assert missing == set(), f"bench/README.md rows name files that are gone: {sorted(missing)}"
