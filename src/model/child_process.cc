#include "model/child_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

namespace kforge::model {

std::string ChildResult::describe() const {
  if (exit_code < 0) return "did not start";
  if (exit_code > 128) return fmt::format("ended by signal {} ({})", exit_code - 128, strsignal(exit_code - 128));
  return fmt::format("exit code {}", exit_code);
}

ChildResult run_child(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                      const std::filesystem::path& log) {
  ChildResult result;
  if (argv.empty()) return result;
  int log_fd = -1;
  if (!log.empty()) {
    std::filesystem::create_directories(log.parent_path());
    log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log_fd < 0) return result;
  }
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    if (log_fd >= 0) ::close(log_fd);
    return result;
  }
  if (pid == 0) {
    for (const auto& [k, v] : env) ::setenv(k.c_str(), v.c_str(), 1);
    if (log_fd >= 0) {
      ::dup2(log_fd, STDOUT_FILENO);
      ::dup2(log_fd, STDERR_FILENO);
    }
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "kforge model: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  if (log_fd >= 0) ::close(log_fd);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

}  // namespace kforge::model
