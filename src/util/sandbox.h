// Wrapping a worker command in bubblewrap: no network, a private PID namespace (so a child that
// calls setsid still dies with the sandbox), a private /tmp and no view of the user's home.
// Where bubblewrap is missing or not permitted, kforge falls back to process groups, a child
// subreaper and resource limits (see docs/isolation.md).
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

struct SandboxPolicy {
  std::vector<std::filesystem::path> hidden_dirs;      // replaced by an empty tmpfs (e.g. $HOME)
  std::vector<std::filesystem::path> hidden_files;     // replaced by /dev/null (e.g. a config file)
  std::vector<std::filesystem::path> read_only;        // re-exposed read-only (under hidden dirs)
  std::vector<std::filesystem::path> writable;         // bound read-write (build caches, workdir)
  bool network = false;
  bool devices = false;                                // full /dev (GPUs); else a minimal /dev
};

// The bubblewrap binary if it exists and can create the namespaces kforge asks for here; probed once.
std::optional<std::string> usable_bwrap();

// The argv that runs `command` inside the sandbox.
std::vector<std::string> sandboxed_command(const std::string& bwrap, const SandboxPolicy& policy,
                                           const std::vector<std::string>& command);

}  // namespace kforge
