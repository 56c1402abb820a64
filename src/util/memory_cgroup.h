// A memory cgroup of one candidate: every page its processes make resident counts against one limit,
// memory files (memfd) and tmpfs pages included, which no rlimit counts (RLIMIT_AS sees only what is
// mapped, RLIMIT_FSIZE one file at a time, the tmpfs size one mount).
//
// Made below kforge's own cgroup (cgroup v2, or v1's memory hierarchy) where kforge may write there
// (as root, or in a delegated subtree); elsewhere none is made and the candidate is bounded only by
// the rlimits and the tmpfs sizes (docs/isolation.md says so).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace kforge {

class MemoryCgroup {
 public:
  // A new cgroup named `name` with a limit of `limit_bytes`, or nullptr where none can be made.
  static std::unique_ptr<MemoryCgroup> create(const std::string& name, std::uint64_t limit_bytes);
  ~MemoryCgroup();  // removes the cgroup (its processes are gone by then: the worker's tree is killed first)
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  // The file a process writes "0" to to join (a child between fork and exec).
  const std::string& procs_file() const { return procs_; }
  std::uint64_t limit_bytes() const { return limit_; }
  // Whether its processes reached the limit (the kernel then reclaims, or kills one of them).
  bool limit_reached() const;

 private:
  MemoryCgroup(std::string dir, bool v2, std::uint64_t limit);
  std::string dir_, procs_;
  bool v2_ = false;
  std::uint64_t limit_ = 0;
};

// Where this process's memory cgroup is: its v2 folder ("0::/path"), or v1's memory hierarchy; the
// flag says which. nullopt when /proc/self/cgroup names neither.
std::optional<std::pair<std::string, bool>> own_memory_cgroup();

}  // namespace kforge
