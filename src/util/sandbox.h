// Wrapping a worker command in bubblewrap: a minimal file-system view (only what is listed below),
// no network, a private PID namespace (so a child that calls setsid still dies with the sandbox), a
// size-limited private /tmp, and an unprivileged host uid. Where bubblewrap is missing or not
// permitted, kforge falls back to process groups, a child subreaper and resource limits
// (see docs/isolation.md).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kforge {

// A host uid and gid to run untrusted code as.
using HostIds = std::pair<uid_t, gid_t>;

struct SandboxPolicy {
  std::vector<std::filesystem::path> read_only;  // bound read-only where they are (interpreter, worker, caches)
  std::vector<std::filesystem::path> writable;   // bound read-write (the worker's own directory)
  std::vector<std::filesystem::path> devices;    // device nodes bound in (the target's [sandbox] devices)
  std::uint64_t tmp_bytes = 2ull << 30;          // size of the private tmpfs at /tmp
  std::uint64_t shm_bytes = 64ull << 20;         // size of the private tmpfs at /dev/shm
  bool network = false;
  // kforge runs as root: bubblewrap (root) sets the view up, then the command runs under this host
  // uid and gid, with no capabilities (setpriv). A user namespace alone would still be root outside.
  std::optional<HostIds> drop_to;
};

// What every sandbox shows of the host besides the policy's paths: /usr (with the /bin, /lib...
// links of a merged-/usr system), the /etc files the dynamic loader and the toolchains read, /sys
// (read-only: CPU topology for OpenMP and PoCL, PCI data for the GPU driver) and a fresh /proc.
std::vector<std::filesystem::path> sandbox_system_paths();

// The bubblewrap binary if it exists and can create the namespaces kforge asks for (and, as root,
// setpriv can drop to an unprivileged uid inside); probed once.
std::optional<std::string> usable_bwrap();

// The argv that runs `command` inside the sandbox.
std::vector<std::string> sandboxed_command(const std::string& bwrap, const SandboxPolicy& policy,
                                           const std::vector<std::string>& command);

// The uid and gid untrusted code runs under: `configured` (kforge.toml [sandbox] uid, default 65534,
// "nobody") when kforge is root, else none (kforge's own unprivileged uid is kept).
std::optional<HostIds> sandbox_ids(std::optional<uid_t> configured);

// How full the private /tmp of a running sandbox is, seen from outside through /proc/PID/root of a
// process inside it (`sandbox_pid`: bubblewrap's pid, as kforge started it). None when it cannot be
// read (the sandbox has exited).
struct TmpUsage {
  std::uint64_t used_bytes = 0;
  std::uint64_t size_bytes = 0;
};
std::optional<TmpUsage> sandbox_tmp_usage(pid_t sandbox_pid);

}  // namespace kforge
