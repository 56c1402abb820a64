#pragma once
// A memory cgroup of its own for one process tree (a sandboxed candidate): its memory, its memory
// files (memfds) and its tmpfs pages count against one limit, where an RLIMIT counts none of the
// last two and a GPU target sets no RLIMIT_AS at all. The kernel's out-of-memory killer ends the
// tree when it passes the limit, and the cgroup's own counters say so.
//
// Made under this process's own cgroup, in cgroup v2 (the memory controller enabled for its
// children) or else in cgroup v1's memory hierarchy, where kforge may write there (as root, or a
// delegated cgroup). Where it may not, there is no cgroup and memory_cgroups_unavailable() says why.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace kforge {

class MemoryCgroup {
 public:
  // A new cgroup limited to `limit_bytes`, or nullptr where none can be made (`*why` says why).
  static std::unique_ptr<MemoryCgroup> create(std::uint64_t limit_bytes, std::string* why);
  ~MemoryCgroup();  // removes it (its processes must be gone; charges left move to the parent)
  MemoryCgroup(const MemoryCgroup&) = delete;
  MemoryCgroup& operator=(const MemoryCgroup&) = delete;

  // The file a process writes its pid to, to join (a child does so between fork and exec).
  const std::string& procs_file() const { return procs_file_; }
  std::uint64_t limit_bytes() const { return limit_; }
  // Processes of it the out-of-memory killer ended for passing the limit.
  std::int64_t oom_kills() const;
  // The most memory it held at once, where the kernel reports it.
  std::optional<std::uint64_t> peak_bytes() const;

 private:
  MemoryCgroup() = default;
  std::filesystem::path dir_;
  std::string procs_file_;
  std::uint64_t limit_ = 0;
  bool v2_ = false;
};

// Why no memory cgroup can be made here, or nullopt where one can.
std::optional<std::string> memory_cgroups_unavailable();

}  // namespace kforge
