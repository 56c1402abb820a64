// exec: provider (see exec_provider.h). The request is written to a private temporary
// directory (request.json, which is also the command's stdin, and prompt.md); the command
// runs in its own process group so a timeout or Ctrl-C can stop everything it started.
#include "llm/exec_provider.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/errors.h"
#include "llm/markdown.h"
#include "llm/reply_format.h"

extern char** environ;

namespace kforge::llm {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

namespace {

constexpr std::size_t kMaxOutput = 64u << 20;
constexpr std::size_t kStderrTail = 2000;

class TempDir {
 public:
  TempDir() {
    fs::path base = fs::temp_directory_path() / "kforge-exec-XXXXXX";
    std::string pattern = base.string();
    if (!mkdtemp(pattern.data()))
      throw LlmError(ErrorKind::kCommandFailed, fmt::format("cannot create a temporary directory: {}", std::strerror(errno)));
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

void stop_group(pid_t pid) {
  ::kill(-pid, SIGTERM);
  for (int i = 0; i < 50; ++i) {
    if (::waitpid(pid, nullptr, WNOHANG) == pid) return;
    std::this_thread::sleep_for(milliseconds(20));
  }
  ::kill(-pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

std::string tail(const std::string& s) {
  return s.size() <= kStderrTail ? s : "..." + s.substr(s.size() - kStderrTail);
}

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

}  // namespace

ExecProvider::ExecProvider(ExecProviderOptions options) : options_(std::move(options)) {}

Response ExecProvider::complete(const Request& request) {
  const auto start = clock::now();
  Response response = run_with_retries(options_.retry, options_.cancel, name(),
                                       [&](AttemptBudget left) { return run_once(request, left); });
  response.latency = std::chrono::duration_cast<milliseconds>(clock::now() - start);
  if (response.model.empty()) response.model = options_.command;
  response.provider = name();
  return response;
}

Response ExecProvider::run_once(const Request& request, milliseconds budget) {
  throw_if_cancelled(options_.cancel);
  Request effective = as_sent(request);
  if (effective.max_tokens <= 0) effective.max_tokens = options_.default_max_tokens;
  if (!effective.temperature) effective.temperature = options_.temperature;

  TempDir dir;
  const fs::path request_file = dir.path() / "request.json";
  const fs::path prompt_file = dir.path() / "prompt.md";
  write_file_atomically(request_file, request_to_json(effective).dump(2) + "\n");
  auto images = write_request_images(effective, dir.path(), "prompt");
  write_file_atomically(prompt_file, render_markdown(effective, images));

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) throw LlmError(ErrorKind::kCommandFailed, "pipe() failed");
  Fd out_r{out_pipe[0]}, out_w{out_pipe[1]};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw LlmError(ErrorKind::kCommandFailed, "pipe() failed");
  Fd err_r{err_pipe[0]}, err_w{err_pipe[1]};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, request_file.c_str(), O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_w.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_w.fd, 2);

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t no_signals, default_signals;
  sigemptyset(&no_signals);
  sigemptyset(&default_signals);
  sigaddset(&default_signals, SIGPIPE);
  sigaddset(&default_signals, SIGINT);
  sigaddset(&default_signals, SIGTERM);
  posix_spawnattr_setsigmask(&attr, &no_signals);
  posix_spawnattr_setsigdefault(&attr, &default_signals);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view entry(*e);
    if (entry.starts_with("KFORGE_REQUEST_FILE=") || entry.starts_with("KFORGE_PROMPT_FILE=")) continue;
    env_strings.emplace_back(entry);
  }
  env_strings.push_back("KFORGE_REQUEST_FILE=" + request_file.string());
  env_strings.push_back("KFORGE_PROMPT_FILE=" + prompt_file.string());
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);

  std::string sh = "/bin/sh", dash_c = "-c", command = options_.command;
  char* argv[] = {sh.data(), dash_c.data(), command.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0)
    throw LlmError(ErrorKind::kCommandFailed, fmt::format("cannot start /bin/sh: {}", std::strerror(rc)));
  out_w.reset();
  err_w.reset();

  const milliseconds limit = std::min(options_.timeout, budget);
  const auto deadline = clock::now() + limit;
  std::string out, err;
  bool out_open = true, err_open = true;
  char buffer[65536];
  while (out_open || err_open) {
    if (is_cancelled(options_.cancel)) {
      stop_group(pid);
      throw LlmError(ErrorKind::kCancelled, "interrupted (Ctrl-C)");
    }
    if (clock::now() >= deadline) {
      stop_group(pid);
      throw LlmError(ErrorKind::kTimeout,
                     fmt::format("exec: `{}` did not finish within {:.1f} s ([llm.exec] timeout_s)", options_.command,
                                 limit.count() / 1000.0));
    }
    pollfd fds[2] = {{out_open ? out_r.fd : -1, POLLIN, 0}, {err_open ? err_r.fd : -1, POLLIN, 0}};
    int n = ::poll(fds, 2, 20);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
      if (got > 0) {
        std::string& sink = i == 0 ? out : err;
        if (sink.size() < kMaxOutput) sink.append(buffer, static_cast<std::size_t>(got));
      } else if (got == 0 || errno != EINTR) {
        (i == 0 ? out_open : err_open) = false;
      }
    }
  }

  int status = 0;
  while (true) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (is_cancelled(options_.cancel)) {
      stop_group(pid);
      throw LlmError(ErrorKind::kCancelled, "interrupted (Ctrl-C)");
    }
    if (clock::now() >= deadline) {
      stop_group(pid);
      throw LlmError(ErrorKind::kTimeout, fmt::format("exec: `{}` did not exit within {:.1f} s", options_.command,
                                                      limit.count() / 1000.0));
    }
    std::this_thread::sleep_for(milliseconds(10));
  }

  const std::string stderr_text = trim(tail(err));
  if (WIFSIGNALED(status)) {
    throw LlmError(ErrorKind::kCommandFailed,
                   fmt::format("exec: `{}` was killed by signal {}{}{}", options_.command, WTERMSIG(status),
                               stderr_text.empty() ? "" : "; stderr: ", stderr_text));
  }
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (code != 0) {
    throw LlmError(ErrorKind::kCommandFailed,
                   fmt::format("exec: `{}` exited with status {}{}{}{}", options_.command, code,
                               code == kExecTempFailExit ? " (temporary failure, retried)" : "",
                               stderr_text.empty() ? "" : "; stderr: ", stderr_text),
                   code == kExecTempFailExit);
  }
  return parse_reply(out, fmt::format("exec: `{}`", options_.command));
}

}  // namespace kforge::llm
