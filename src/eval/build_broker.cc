#include "eval/build_broker.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "util/errors.h"
#include "util/file_tree.h"
#include "util/subprocess.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {
// A request carries at most a few MiB of source; anything longer is not a build request.
constexpr std::size_t kMaxRequestBytes = 8u << 20;

std::string error_reply(const std::string& message) {
  return json({{"ok", false}, {"error", message}, {"log", ""}}).dump();
}

bool write_all(int fd, const std::string& data) {
  std::size_t off = 0;
  while (off < data.size()) {
    ssize_t n = send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return false;
    }
    off += static_cast<std::size_t>(n);
  }
  return true;
}
}  // namespace

BuildBroker::BuildBroker(BuildBrokerSettings settings) : settings_(std::move(settings)) {
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
    throw InternalError(fmt::format("socketpair: {}", std::strerror(errno)));
  fd_ = fds[0];
  worker_fd_ = fds[1];
  if (settings_.prestart) {
    try {
      warm_ = start_builder(true);
    } catch (const std::exception& e) {  // the first request starts one as usual
      spdlog::debug("kforge's builder not started ahead: {}", e.what());
    }
  }
  thread_ = std::thread([this] { serve(); });
}

BuildBroker::~BuildBroker() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  close_worker_end();
  if (fd_ >= 0) close(fd_);
}

void BuildBroker::close_worker_end() {
  if (worker_fd_ >= 0) close(worker_fd_);
  worker_fd_ = -1;
}

void BuildBroker::serve() {
  std::string buffer;
  char chunk[65536];
  while (!stop_) {
    struct pollfd p = {fd_, POLLIN, 0};
    int r = poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) return;
    if (r <= 0) continue;
    ssize_t n = recv(fd_, chunk, sizeof chunk, 0);
    if (n == 0) return;  // the worker is gone
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      return;
    }
    buffer.append(chunk, static_cast<std::size_t>(n));
    if (buffer.size() > kMaxRequestBytes && buffer.find('\n') == std::string::npos) {
      write_all(fd_, error_reply(fmt::format("build request longer than {} bytes", kMaxRequestBytes)) + "\n");
      return;
    }
    for (auto nl = buffer.find('\n'); nl != std::string::npos && !stop_; nl = buffer.find('\n')) {
      std::string line = buffer.substr(0, nl);
      buffer.erase(0, nl + 1);
      if (!write_all(fd_, handle(line) + "\n")) return;
    }
  }
}

std::string BuildBroker::handle(const std::string& line) {
  json request = json::parse(line, nullptr, false);
  if (!request.is_object()) return error_reply("a build request is one JSON object per line");
  // Each build gets a fresh folder, owned by the compiler's uid, removed afterwards.
  fs::path dir = settings_.work_root / fmt::format("build-{}", builds_++);
  remove_tree(dir);
  fs::create_directories(dir);
  if (settings_.run_as && chown(dir.c_str(), settings_.run_as->first, settings_.run_as->second) != 0)
    return error_reply(fmt::format("cannot prepare the build folder: {}", std::strerror(errno)));
  std::vector<std::string> sandbox;
  if (settings_.bwrap) {
    SandboxPolicy policy = settings_.compiler_policy;
    policy.writable.push_back(dir);
    sandbox = sandboxed_command(*settings_.bwrap, policy, {});
  }
  // The builder keeps what this evaluation's builds installed beside the build folders, which no
  // sandbox sees (sandboxed_build.py: count and bytes per evaluation).
  json message = {{"request", request}, {"sandbox", sandbox}, {"build_dir", dir.string()},
                  {"timeout", settings_.timeout_s}, {"quota_file", (settings_.work_root / "build-quota.json").string()}};

  std::string reply;
  {
    // The prestarted builder where it is still there (it waits for one request, nothing else).
    std::unique_ptr<Subprocess> builder = std::move(warm_);
    if (!builder || !builder->send_line(message.dump())) {
      builder = start_builder(false);
      builder->send_line(message.dump());
    }
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::milliseconds(static_cast<long long>((settings_.timeout_s + 30) * 1000));
    std::string got;
    WaitOutcome outcome = WaitOutcome::kTimeout;
    while (!stop_) {
      auto step = std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(200));
      outcome = builder->wait_line(step, &got);
      if (outcome != WaitOutcome::kTimeout || std::chrono::steady_clock::now() >= deadline) break;
    }
    if (outcome == WaitOutcome::kReply) {
      reply = got;
    } else {
      spdlog::debug("kforge's builder failed: {}", builder->log_excerpt(2000));
      reply = error_reply(outcome == WaitOutcome::kTimeout
                              ? fmt::format("the build ran past {:.0f} s", settings_.timeout_s)
                              : "kforge's builder failed: " + builder->log_excerpt(4000));
    }
  }
  remove_tree(dir);  // by descriptor: the sandboxed compiler can nest folders past PATH_MAX there
  return reply;
}

std::unique_ptr<Subprocess> BuildBroker::start_builder(bool warm) const {
  SpawnOptions spawn;
  spawn.argv = {settings_.python, "-m", "kforge_worker.builder.sandboxed_build"};
  if (warm) spawn.argv.push_back("--warm");
  spawn.env = settings_.env;
  // Not the build folder: `python -m` puts its working folder first on its import path, and the
  // sandboxed compiler can write the build folder. No sandbox sees the worker's root.
  spawn.cwd = settings_.work_root;
  spawn.log_cap_bytes = 4u << 20;
  return Subprocess::spawn(spawn);
}

}  // namespace kforge
