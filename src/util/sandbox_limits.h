// The counts a sandboxed candidate may not pass, besides the sizes of its tmpfs (sandbox.h).
#pragma once

#include <cstdint>

namespace kforge {

// Files and folders (inodes) a candidate may make: the inode count of its /tmp and /dev/shm (a tmpfs's
// default allows millions, each costing kernel memory, and an empty file costs nothing against a
// size), and the most its own folder on the host may hold after an evaluation.
inline constexpr std::uint64_t kSandboxInodes = 100000;

// Tasks (processes and threads) of the sandbox's uid: thousands of threads fail long before the host's
// pid_max. RLIMIT_NPROC counts every task of that uid, so it is shared by the candidates and
// compilers running at once (a pool's next candidate, a head-to-head's two).
inline constexpr std::uint64_t kSandboxTasks = 2048;

}  // namespace kforge
