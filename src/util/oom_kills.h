#pragma once
// How many processes the kernel's out-of-memory killer has ended. A worker killed by SIGKILL that
// kforge did not kill itself may have been ended that way; if this count went up meanwhile, it ran
// out of host memory.

#include <cstdint>
#include <optional>
#include <string_view>

namespace kforge {

// Kills in this process's cgroup, its descendants included (cgroup v2 `memory.events`, "oom_kill"),
// where that file can be read; else on the whole machine (`/proc/vmstat`, "oom_kill"). nullopt where
// neither can be read (then no death is put down to memory).
std::optional<std::int64_t> oom_kill_count();

// The value of `key` in text of "key value" lines (memory.events, vmstat), or nullopt.
std::optional<std::int64_t> counter_in(std::string_view text, std::string_view key);

}  // namespace kforge
