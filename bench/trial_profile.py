"""Where one worker command costs more the first time than later: py-spy's ordered samples of a
kforge evaluation, split into the worker commands they fall in, and one occurrence of a command put
beside another (trial 0's candidate run beside trial 2's, say).

bench/worker_profile.sh with FORMAT=speedscope records them (``py-spy record --format speedscope
--idle -r 1000``: each thread's samples in the order taken, waits included, so a sample is a
millisecond of the command's wall time). Threads that run no command (the transport's) are left out.

    python bench/trial_profile.py PROFILE.json [--command run] [--occurrences 0,2] [--top 25]
"""

import argparse
import collections
import json

# The worker's command handlers (reference.py, candidate.py, guard.py, memory_estimate.py, session.py).
COMMANDS = {"warm", "estimate_memory", "load_problem", "static_check", "calibrate", "load_candidate", "make_trial",
            "run", "check", "prepare_timing", "time", "timing_outputs"}
WORKER_FILES = ("kforge_worker/roles/reference.py", "kforge_worker/roles/candidate.py", "kforge_worker/checks/guard.py",
                "kforge_worker/checks/memory_estimate.py", "kforge_worker/common/session.py")


def frame_name(frame: dict) -> str:
    return f"{frame['name']} ({frame['file'].rsplit('/', 1)[-1]}:{frame['line']})"


def command_of(stack: list, frames: list):
    """The worker command a sample falls in: the outermost handler frame on its stack, or None."""
    for i in stack:
        f = frames[i]
        if f["name"].rsplit(".", 1)[-1] in COMMANDS and f["file"].endswith(WORKER_FILES):
            return f["name"].rsplit(".", 1)[-1]
    return None


def occurrences(profile: dict, frames: list) -> list:
    """[(command, [stacks])] in the order run. A sample outside every command (the worker waiting for
    the next request, recorded with py-spy's --idle) ends an occurrence; empty stacks (samples py-spy
    could not read) are skipped."""
    runs, open_run = [], False
    for stack in profile["samples"]:
        if not stack:
            continue
        command = command_of(stack, frames)
        if command is None:
            open_run = False
            continue
        if not open_run or runs[-1][0] != command:
            runs.append((command, []))
            open_run = True
        runs[-1][1].append(stack)
    return runs


def inclusive(stacks: list, frames: list) -> collections.Counter:
    """Samples per frame, each frame counted once per sample (a function's own time and its callees')."""
    counts = collections.Counter()
    for stack in stacks:
        for i in set(stack):
            counts[frame_name(frames[i])] += 1
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("profile", help="py-spy's speedscope JSON")
    ap.add_argument("--command", default="run")
    ap.add_argument("--occurrences", default="0,2", help="which occurrences of the command to list (0: the first)")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    with open(args.profile) as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    picks = [int(k) for k in args.occurrences.split(",")]
    for profile in doc["profiles"]:
        runs = occurrences(profile, frames)
        if not runs:
            continue
        listed = ", ".join(f"{c} {len(s)}" for c, s in runs[:40])
        print(f"== {profile['name']}: {listed}{', ...' if len(runs) > 40 else ''}")
        mine = [stacks for command, stacks in runs if command == args.command]
        for k in picks:
            if k >= len(mine):
                continue
            counts = inclusive(mine[k], frames)
            print(f"  -- {args.command} #{k}: {len(mine[k])} samples")
            # Frames on every sample (the serve loop around the command) say nothing about where it went.
            varying = [(name, n) for name, n in counts.most_common() if n < len(mine[k])]
            for name, n in varying[:args.top]:
                print(f"     {n:6d}  {name}")


if __name__ == "__main__":
    main()
