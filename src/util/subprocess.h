// Child processes that kforge supervises: a worker with a command pipe, a private reply pipe and a
// captured log, its own process group, resource limits, and a kill that takes its whole tree down.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "util/memory_cgroup.h"

namespace kforge {

struct ResourceLimits {
  std::uint64_t address_space_bytes = 0;  // RLIMIT_AS; 0 = unlimited (CUDA needs unlimited)
  std::uint64_t file_size_bytes = 0;      // RLIMIT_FSIZE; 0 = unlimited
  std::uint64_t open_files = 4096;        // RLIMIT_NOFILE
  // A memory cgroup of its own (memory_cgroup.h) limited to this, memory files and tmpfs pages
  // included; 0 = none. Where none can be made the child runs without (memory_cgroup_missing()).
  std::uint64_t memory_bytes = 0;
};

struct SpawnOptions {
  std::vector<std::string> argv;             // argv[0] is looked up in PATH of `env`
  std::map<std::string, std::string> env;    // the complete environment of the child
  std::filesystem::path cwd;
  ResourceLimits limits;
  std::uint64_t log_cap_bytes = 16ull << 20;  // combined stdout+stderr beyond this is a flood
  std::filesystem::path log_file;            // where the full captured output is written (optional)
  int channel_fd = -1;                       // handed to the child as fd 4 (a candidate's build channel)
};

// How a wait for a reply ended.
enum class WaitOutcome { kReply, kTimeout, kExited, kOutputFlood };

struct ExitStatus {
  bool exited = false;  // the process has been reaped
  int code = -1;        // exit code when it exited normally
  int signal = 0;       // terminating signal, 0 if none
  std::string describe() const;  // "exit code 1", "killed by signal 11 (Segmentation fault)"
  // The signal that ended the process, also where a sandbox (bubblewrap) or shell in between
  // reported it as exit code 128 + N; 0 if none.
  int terminating_signal() const;
};

// A child that reads one line per command on stdin and writes one line per reply on fd 3;
// stdout and stderr are merged, drained continuously and capped.
class Subprocess {
 public:
  static std::unique_ptr<Subprocess> spawn(const SpawnOptions& options);
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  // Writes `line` (a newline is appended) to the child's stdin. False if the child is gone.
  bool send_line(const std::string& line);

  // Waits until a complete reply line arrives, the deadline passes, the child exits or floods
  // its log. On kReply, `*line` holds the line without its newline.
  WaitOutcome wait_line(std::chrono::steady_clock::time_point deadline, std::string* line);

  // Kills the child's whole tree (process group, and with a sandbox its PID namespace) and reaps it.
  void kill_tree();
  // Closes stdin and waits up to `grace` for a clean exit before kill_tree().
  void finish(std::chrono::milliseconds grace);

  // From now on the captured output goes to `file` (truncated), and log_excerpt() and the flood cap
  // count from here: a worker kept for another evaluation gets that evaluation's log.
  void log_to(const std::filesystem::path& file);

  // Keeps `resource` (e.g. the build broker serving this worker) alive until the process is gone.
  void attach(std::shared_ptr<void> resource) { attached_.push_back(std::move(resource)); }

  // The child's memory cgroup (ResourceLimits::memory_bytes), or nullptr; and why there is none
  // where one was asked for.
  const MemoryCgroup* memory_cgroup() const { return memory_cgroup_.get(); }
  const std::string& memory_cgroup_missing() const { return memory_cgroup_missing_; }

  pid_t pid() const { return pid_; }
  const ExitStatus& exit_status() const { return exit_; }
  std::uint64_t log_bytes() const { return log_bytes_; }
  // The first and last parts of the captured output (at most 64 KiB each), for messages.
  std::string log_excerpt(std::size_t max_bytes = 8192) const;

 private:
  Subprocess() = default;
  void drain_log(bool until_eof);
  void reap(bool block);
  void append_log(const char* data, std::size_t n);

  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  int reply_fd_ = -1;
  int log_fd_ = -1;
  int log_file_fd_ = -1;
  std::string tree_id_;  // KFORGE_TREE_ID given to every process of this tree
  std::string reply_buffer_;
  std::string log_head_;
  std::string log_tail_;
  std::uint64_t log_bytes_ = 0;
  std::uint64_t log_cap_ = 0;
  ExitStatus exit_;
  std::vector<std::shared_ptr<void>> attached_;
  std::shared_ptr<MemoryCgroup> memory_cgroup_;  // removed after the tree is killed
  std::string memory_cgroup_missing_;
};

// Runs a short command to completion and returns its exit code and merged output (for probes
// such as `bwrap --version`); -1 if it could not start or ran past the timeout.
struct CommandResult {
  int exit_code = -1;
  std::string output;
  bool output_cut = false;  // more was printed than `output` holds
};
CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>* env = nullptr);

// Like run_command, for a command whose output is data (an export): `output` is all of it, up to
// max_bytes, not a head-and-tail excerpt; past max_bytes it is cut and output_cut says so.
CommandResult run_command_whole(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                std::uint64_t max_bytes);

// Makes this process a child subreaper, so descendants that detach (setsid, double fork) are
// re-parented to kforge and can still be found and killed. Call once at start-up.
void become_subreaper();

}  // namespace kforge
