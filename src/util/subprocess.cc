#include "util/subprocess.h"
#include "util/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "util/environment.h"
#include "util/errors.h"
#include "util/paths.h"

namespace kforge {

namespace {

// Writes this process's pid to a cgroup's procs file: between fork and exec, so async-signal-safe.
bool join_cgroup(const char* procs_file) {
  char digits[24];
  int n = 0;
  for (long pid = getpid(); pid > 0 || n == 0; pid /= 10) digits[n++] = static_cast<char>('0' + pid % 10);
  char text[24];
  for (int i = 0; i < n; ++i) text[i] = digits[n - 1 - i];
  const int fd = open(procs_file, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = write(fd, text, n) == n;
  close(fd);
  return ok;
}

constexpr std::size_t kExcerptPart = 64 * 1024;

void set_nonblock(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

void make_pipe(int fds[2]) {
  if (pipe2(fds, O_CLOEXEC) != 0) throw InternalError(fmt::format("pipe: {}", std::strerror(errno)));
}

// A /proc file of another process, empty once that process is gone. Not through an ifstream: a
// read that fails (ESRCH when the process exits between open and read) throws out of an
// istreambuf_iterator, which ended a `kforge run` with "basic_filebuf::underflow error".
std::string read_proc_file(const std::string& path) {
  std::string content;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return content;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      content.clear();
      break;
    }
    content.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return content;
}

void set_limit(int resource, std::uint64_t value) {
  if (value == 0) return;
  struct rlimit rl {value, value};
  setrlimit(resource, &rl);
}

// Finds processes whose parent is `parent` (scanning /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* dir = opendir("/proc");
  if (!dir) return out;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string content = read_proc_file(fmt::format("/proc/{}/stat", pid));
    auto close = content.rfind(')');
    if (close == std::string::npos) continue;
    // After "pid (comm) " come state and ppid.
    char state = 0;
    long ppid = 0;
    if (std::sscanf(content.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  closedir(dir);
  return out;
}

// A process's state, parent and process group, from /proc/<pid>/stat (a zombie keeps them all).
struct ProcStat {
  char state = 0;
  pid_t ppid = 0, pgrp = 0;
};
std::optional<ProcStat> proc_stat(pid_t pid) {
  const std::string content = read_proc_file(fmt::format("/proc/{}/stat", pid));
  auto close = content.rfind(')');
  ProcStat out;
  long ppid = 0, pgrp = 0;
  if (close == std::string::npos ||
      std::sscanf(content.c_str() + close + 1, " %c %ld %ld", &out.state, &ppid, &pgrp) != 3)
    return std::nullopt;
  out.ppid = static_cast<pid_t>(ppid);
  out.pgrp = static_cast<pid_t>(pgrp);
  return out;
}

// Waits for the processes left in the killed process group `pgid`. Those whose parent died first
// were re-parented to kforge (the subreaper) and, once dead, stay zombies until kforge waits for
// them: a zombie no longer shows its environment (the tree id), but it keeps its group. Members
// still under a dying parent are given a moment (a second at most) to come to kforge.
void reap_group(pid_t pgid) {
  const pid_t self = getpid();
  ::kill(-pgid, SIGKILL);  // those of an exited worker too
  for (int round = 0; round < 200 && ::kill(-pgid, 0) == 0; ++round) {
    bool waited = false, dying = false;
    DIR* dir = opendir("/proc");
    if (!dir) return;
    while (dirent* e = readdir(dir)) {
      char* end = nullptr;
      const long pid = std::strtol(e->d_name, &end, 10);
      if (*end != '\0' || pid <= 0) continue;
      const std::optional<ProcStat> st = proc_stat(static_cast<pid_t>(pid));
      if (!st || st->pgrp != pgid) continue;
      if (st->ppid == self) waited = waitpid(static_cast<pid_t>(pid), nullptr, 0) > 0 || waited;
      else if (st->state != 'Z') dying = true;
    }
    closedir(dir);
    if (!waited && !dying) return;  // only zombies some other process will wait for
    if (!waited) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// True when /proc/<pid>/environ holds KFORGE_TREE_ID=<tree_id>.
bool has_tree_id(pid_t pid, const std::string& tree_id) {
  const std::string environ_text = read_proc_file(fmt::format("/proc/{}/environ", pid));
  std::string needle = "KFORGE_TREE_ID=" + tree_id;
  std::size_t pos = 0;
  while ((pos = environ_text.find(needle, pos)) != std::string::npos) {
    bool starts = pos == 0 || environ_text[pos - 1] == '\0';
    std::size_t end = pos + needle.size();
    if (starts && (end == environ_text.size() || environ_text[end] == '\0')) return true;
    pos = end;
  }
  return false;
}

std::string new_tree_id() {
  static std::mt19937_64 rng(std::random_device{}());
  static std::mutex mutex;
  std::lock_guard lock(mutex);
  return fmt::format("{:016x}", rng());
}

std::mutex g_workers_mutex;
std::set<pid_t> g_live_workers;

// bubblewrap run as root with a PID namespace leaves its namespace's init process behind when it
// exits; kforge, the subreaper, inherits it, and it stays a zombie unless kforge reaps it (here,
// whenever a worker starts or ends). Only
// zombies named bwrap that are not workers are reaped here: other children of kforge (an LLM
// provider's command) are waited for by their own code. Call with g_workers_mutex held.
void reap_orphaned_sandboxes() {
  DIR* dir = opendir("/proc");
  if (!dir) return;
  const pid_t self = getpid();
  std::vector<pid_t> zombies;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0) continue;
    const std::string content = read_proc_file(fmt::format("/proc/{}/stat", pid));
    auto open = content.find('('), close = content.rfind(')');
    if (open == std::string::npos || close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (content.compare(open + 1, close - open - 1, "bwrap") == 0 &&
        std::sscanf(content.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == self && state == 'Z')
      zombies.push_back(static_cast<pid_t>(pid));
  }
  closedir(dir);
  for (pid_t z : zombies)
    if (!g_live_workers.count(z)) waitpid(z, nullptr, WNOHANG);
}


}  // namespace

int ExitStatus::terminating_signal() const {
  if (!exited) return 0;
  if (signal != 0) return signal;
  return code > 128 && code < 128 + 32 ? code - 128 : 0;
}

std::string ExitStatus::describe() const {
  if (!exited) return "still running";
  if (signal != 0) return fmt::format("killed by signal {} ({})", signal, strsignal(signal));
  if (const int through = terminating_signal())
    return fmt::format("exit code {}: killed by signal {} ({})", code, through, strsignal(through));
  return fmt::format("exit code {}", code);
}

void become_subreaper() { prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); }

std::unique_ptr<Subprocess> Subprocess::spawn(const SpawnOptions& options) {
  if (options.argv.empty()) throw InternalError("spawn: empty argv");
  int in[2], reply[2], log[2];
  make_pipe(in);
  make_pipe(reply);
  make_pipe(log);

  // Every process of this tree inherits the id, so the ones that escape the process group can be
  // told apart from kforge's other children when the tree is killed.
  const std::string tree_id = new_tree_id();
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : options.env)
    if (k != "KFORGE_TREE_ID") env_strings.push_back(k + "=" + v);
  env_strings.push_back("KFORGE_TREE_ID=" + tree_id);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = options.argv;
  std::vector<char*> argv;
  for (auto& s : argv_copy) argv.push_back(s.data());
  argv.push_back(nullptr);
  std::string cwd = options.cwd.string();
  std::string exe = options.argv[0];
  if (exe.find('/') == std::string::npos) {
    auto path_it = options.env.find("PATH");
    std::string path = path_it != options.env.end() ? path_it->second : "/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= path.size()) {
      std::size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string candidate = path.substr(start, end - start) + "/" + exe;
      if (access(candidate.c_str(), X_OK) == 0) {
        exe = candidate;
        break;
      }
      start = end + 1;
    }
  }

  std::shared_ptr<MemoryCgroup> cgroup;
  std::string cgroup_missing;
  if (options.limits.memory_bytes > 0) cgroup = MemoryCgroup::create(options.limits.memory_bytes, &cgroup_missing);
  const char* cgroup_procs = cgroup ? cgroup->procs_file().c_str() : nullptr;

  // Held across fork so a concurrent stray sweep never sees a new worker before it is registered.
  std::unique_lock workers_lock(g_workers_mutex);
  // Not while a reply is awaited (a scan of /proc there would add to the wall time kforge measures):
  // when a worker starts or ends.
  reap_orphaned_sandboxes();
  pid_t pid = fork();
  if (pid < 0) throw InternalError(fmt::format("fork: {}", std::strerror(errno)));
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (cgroup_procs && !join_cgroup(cgroup_procs)) {
      const char msg[] = "kforge: could not join the worker's memory cgroup\n";
      (void)!write(log[1], msg, sizeof msg - 1);
      _exit(125);
    }
    // Moved out of the way first: the dup2 calls below must not overwrite it.
    int channel = options.channel_fd >= 0 ? fcntl(options.channel_fd, F_DUPFD, 100) : -1;
    dup2(in[0], 0);
    dup2(log[1], 1);
    dup2(log[1], 2);
    dup2(reply[1], 3);
    int first_closed = 4;
    if (channel >= 0) {
      dup2(channel, 4);
      first_closed = 5;
    }
    for (int fd = first_closed; fd < 1024; ++fd) close(fd);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    set_limit(RLIMIT_AS, options.limits.address_space_bytes);
    set_limit(RLIMIT_FSIZE, options.limits.file_size_bytes);
    set_limit(RLIMIT_NOFILE, options.limits.open_files);
    set_limit(RLIMIT_CORE, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execve(exe.c_str(), argv.data(), envp.data());
    const char msg[] = "kforge: could not start the worker (execve failed)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(127);
  }
  g_live_workers.insert(pid);
  workers_lock.unlock();
  setpgid(pid, pid);  // also from the parent, so the group exists before we might kill it
  close(in[0]);
  close(reply[1]);
  close(log[1]);

  std::unique_ptr<Subprocess> p(new Subprocess());
  p->pid_ = pid;
  p->tree_id_ = tree_id;
  p->memory_cgroup_ = std::move(cgroup);
  p->memory_cgroup_missing_ = std::move(cgroup_missing);
  p->stdin_fd_ = in[1];
  p->reply_fd_ = reply[0];
  p->log_fd_ = log[0];
  p->log_cap_ = options.log_cap_bytes;
  set_nonblock(p->reply_fd_);
  set_nonblock(p->log_fd_);
  if (!options.log_file.empty()) {
    p->log_file_fd_ = open(options.log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  }
  return p;
}

void Subprocess::log_to(const std::filesystem::path& file) {
  drain_log(false);  // what was printed so far still belongs to the previous file
  if (log_file_fd_ >= 0) close(log_file_fd_);
  log_file_fd_ = open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  log_head_.clear();
  log_tail_.clear();
  log_bytes_ = 0;
}

Subprocess::~Subprocess() {
  kill_tree();
  attached_.clear();
  memory_cgroup_.reset();
  for (int fd : {stdin_fd_, reply_fd_, log_fd_, log_file_fd_})
    if (fd >= 0) close(fd);
}

bool Subprocess::send_line(const std::string& line) {
  if (stdin_fd_ < 0) return false;
  std::string data = line + "\n";
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = write(stdin_fd_, data.data() + off, data.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;  // EPIPE: the child is gone (SIGPIPE is ignored by kforge)
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}

void Subprocess::append_log(const char* data, std::size_t n) {
  log_bytes_ += n;
  if (log_file_fd_ >= 0 && log_bytes_ <= log_cap_ + n) (void)!write(log_file_fd_, data, n);
  if (log_head_.size() < kExcerptPart) {
    std::size_t take = std::min(n, kExcerptPart - log_head_.size());
    log_head_.append(data, take);
    data += take;
    n -= take;
  }
  if (n > 0) {
    log_tail_.append(data, n);
    if (log_tail_.size() > 2 * kExcerptPart) log_tail_.erase(0, log_tail_.size() - kExcerptPart);
  }
}

void Subprocess::drain_log(bool until_eof) {
  if (log_fd_ < 0) return;
  char buf[65536];
  for (;;) {
    ssize_t n = read(log_fd_, buf, sizeof buf);
    if (n > 0) {
      append_log(buf, static_cast<std::size_t>(n));
      if (log_bytes_ > log_cap_ && !until_eof) return;
      continue;
    }
    if (n == 0) {
      close(log_fd_);
      log_fd_ = -1;
      return;
    }
    if (errno == EINTR) continue;
    return;  // EAGAIN
  }
}

void Subprocess::reap(bool block) {
  if (exit_.exited || pid_ <= 0) return;
  int status = 0;
  pid_t r = waitpid(pid_, &status, block ? 0 : WNOHANG);
  if (r == pid_) {
    exit_.exited = true;
    if (WIFEXITED(status)) exit_.code = WEXITSTATUS(status);
    if (WIFSIGNALED(status)) exit_.signal = WTERMSIG(status);
  }
}

WaitOutcome Subprocess::wait_line(std::chrono::steady_clock::time_point deadline, std::string* line) {
  bool looked_late = false;
  for (;;) {
    auto nl = reply_buffer_.find('\n');
    if (nl != std::string::npos) {
      *line = reply_buffer_.substr(0, nl);
      reply_buffer_.erase(0, nl + 1);
      return WaitOutcome::kReply;
    }
    if (log_bytes_ > log_cap_) return WaitOutcome::kOutputFlood;
    if (reply_fd_ < 0) {
      // The reply channel closed: the child exited (or closed fd 3). Collect what it printed.
      drain_log(true);
      reap(false);
      if (!exit_.exited) {
        // Give a closing process a moment to finish exiting before calling it gone.
        auto until = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(2));
        while (!exit_.exited && std::chrono::steady_clock::now() < until) {
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
          reap(false);
        }
      }
      return exit_.exited || std::chrono::steady_clock::now() < deadline ? WaitOutcome::kExited
                                                                          : WaitOutcome::kTimeout;
    }
    auto now = std::chrono::steady_clock::now();
    if (interrupted()) return WaitOutcome::kTimeout;  // Ctrl-C: give up waiting now
    // Past the deadline, what is already in the pipe is still read (one poll that does not wait):
    // a request sent ahead is read when kforge needs its answer, which can be after its deadline.
    const bool late = now >= deadline;
    if (late && looked_late) return WaitOutcome::kTimeout;
    looked_late = late;
    auto ms = late ? -1 : std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count();
    struct pollfd fds[2] = {{reply_fd_, POLLIN, 0}, {log_fd_, POLLIN, 0}};
    int nfds = log_fd_ >= 0 ? 2 : 1;
    int r = poll(fds, nfds, static_cast<int>(std::min<long long>(ms, 200)) + 1);
    if (r < 0 && errno != EINTR) throw InternalError(fmt::format("poll: {}", std::strerror(errno)));
    if (nfds == 2 && (fds[1].revents & (POLLIN | POLLHUP))) drain_log(false);
    if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
      char buf[65536];
      for (;;) {
        ssize_t n = read(reply_fd_, buf, sizeof buf);
        if (n > 0) {
          reply_buffer_.append(buf, static_cast<std::size_t>(n));
          if (reply_buffer_.size() > (64u << 20)) return WaitOutcome::kOutputFlood;
          continue;
        }
        if (n == 0) {
          close(reply_fd_);
          reply_fd_ = -1;
        }
        break;
      }
    }
  }
}

void Subprocess::kill_tree() {
  if (pid_ <= 0) return;
  if (!exit_.exited) {
    ::kill(-pid_, SIGKILL);
    ::kill(pid_, SIGKILL);
  }
  reap(true);
  // Descendants that left the process group (setsid, double fork) were re-parented to kforge,
  // the subreaper. Any child of ours that is not a live worker is such an escapee: kill it.
  std::lock_guard workers_lock(g_workers_mutex);
  g_live_workers.erase(pid_);
  reap_group(pid_);
  // Only processes carrying this tree's id in their environment are ours to kill: other children
  // of kforge (an LLM provider's command, another worker's tree) are left alone.
  for (int round = 0; round < 50; ++round) {
    std::vector<pid_t> strays;
    for (pid_t child : children_of(getpid()))
      if (!g_live_workers.count(child) && has_tree_id(child, tree_id_)) strays.push_back(child);
    if (strays.empty()) break;
    for (pid_t s : strays) ::kill(s, SIGKILL);
    for (pid_t s : strays) waitpid(s, nullptr, 0);
  }
  drain_log(true);
  pid_ = -1;
  reap_orphaned_sandboxes();
}

void Subprocess::finish(std::chrono::milliseconds grace) {
  if (stdin_fd_ >= 0) {
    close(stdin_fd_);
    stdin_fd_ = -1;
  }
  auto until = std::chrono::steady_clock::now() + grace;
  while (!exit_.exited && std::chrono::steady_clock::now() < until) {
    reap(false);
    if (!exit_.exited) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  kill_tree();
}

std::string Subprocess::log_excerpt(std::size_t max_bytes) const {
  std::string all = log_head_;
  if (!log_tail_.empty()) {
    if (log_bytes_ > log_head_.size() + log_tail_.size()) all += "\n[... output cut ...]\n";
    all += log_tail_;
  }
  if (all.size() <= max_bytes) return all;
  std::size_t half = max_bytes / 2;
  return all.substr(0, half) + "\n[... output cut ...]\n" + all.substr(all.size() - half);
}

namespace {

// Runs argv to completion; its merged output also goes whole to `log_file` when one is given.
std::unique_ptr<Subprocess> run_to_exit(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                        const std::map<std::string, std::string>* env, std::uint64_t cap,
                                        const std::filesystem::path& log_file, CommandResult& result) {
  SpawnOptions options;
  options.argv = argv;
  options.env = env ? *env : current_environment();
  options.log_cap_bytes = cap;
  options.log_file = log_file;
  std::unique_ptr<Subprocess> p;
  try {
    p = Subprocess::spawn(options);
  } catch (const std::exception&) {
    return nullptr;
  }
  std::string line;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  // The command does not use fd 3: wait for the reply channel to close, i.e. for it to exit.
  while (p->wait_line(deadline, &line) == WaitOutcome::kReply) {
  }
  p->finish(std::chrono::milliseconds(0));
  const auto& st = p->exit_status();
  result.exit_code = st.exited && st.signal == 0 ? st.code : -1;
  result.output_cut = p->log_bytes() > cap;
  return p;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                          const std::map<std::string, std::string>* env) {
  CommandResult result;
  if (auto p = run_to_exit(argv, timeout, env, 4u << 20, {}, result)) {
    result.output = p->log_excerpt(1 << 20);
    result.output_cut = result.output_cut || p->log_bytes() > result.output.size();
  }
  return result;
}

CommandResult run_command_whole(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                std::uint64_t max_bytes) {
  CommandResult result;
  const std::filesystem::path dir = make_temp_dir("kforge-command-");
  if (run_to_exit(argv, timeout, nullptr, max_bytes, dir / "output", result)) {
    std::ifstream in(dir / "output", std::ios::binary);
    result.output.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (result.output.size() > max_bytes) {
      result.output.resize(max_bytes);
      result.output_cut = true;
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

}  // namespace kforge
