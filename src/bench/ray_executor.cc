#include "bench/ray_executor.h"

#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "bench/eval_request.h"
#include "util/environment.h"
#include "util/errors.h"
#include "util/paths.h"

namespace kforge::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

namespace {
constexpr double kCheckShare = 0.25;  // of a device, for an untimed check
constexpr auto kStartTimeout = std::chrono::seconds(300);  // a cold local Ray start on a busy 2-core host takes ~30 s
}  // namespace

json ray_resources(const std::string& device_kind, bool timing) {
  const double share = timing ? 1.0 : kCheckShare;
  if (device_kind == "cpu") return {{"num_cpus", 1}, {"num_gpus", 0}, {"resources", {{"kforge_cpu", share}}}};
  return {{"num_cpus", 1}, {"num_gpus", share}, {"resources", json::object()}};
}

std::map<std::string, std::string> bridge_environment(std::map<std::string, std::string> env) {
  // Ray's own cluster token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH) is what lets the bridge join an
  // authenticated cluster; it is Ray's credential, not one of kforge's.
  std::erase_if(env, [](const auto& kv) { return looks_secret(kv.first) && !kv.first.starts_with("RAY_AUTH_"); });
  return env;
}

RayExecutor::RayExecutor(const RayExecutorOptions& options) : options_(options) {
  SpawnOptions spawn;
  spawn.argv = {options.python, "-u", "-m", "kforge_ray.bridge", "--kforge", options.kforge_exe.string(),
                "--device-kind", options.device_kind};
  if (!options.address.empty()) spawn.argv.insert(spawn.argv.end(), {"--address", options.address});
  else if (options.local_cpus > 0) spawn.argv.insert(spawn.argv.end(), {"--local-cpus", std::to_string(options.local_cpus)});
  spawn.env = bridge_environment(current_environment());
  const std::string worker_dir = (data_dir() / "worker").string();
  auto& pythonpath = spawn.env["PYTHONPATH"];
  pythonpath = pythonpath.empty() ? worker_dir : worker_dir + ":" + pythonpath;
  spawn.cwd = options.log_file.parent_path();
  fs::create_directories(spawn.cwd);
  spawn.log_file = options.log_file;
  spawn.log_cap_bytes = 1ull << 30;
  bridge_ = Subprocess::spawn(spawn);

  std::string line;
  switch (bridge_->wait_line(Clock::now() + kStartTimeout, &line)) {
    case WaitOutcome::kReply: break;
    case WaitOutcome::kTimeout:
      bridge_->kill_tree();
      throw InputError(fmt::format("Ray did not start within {} s (log: {})", kStartTimeout.count(),
                                   options.log_file.string()));
    default:
      bridge_->finish(std::chrono::milliseconds(0));
      throw InputError(fmt::format("the Ray bridge ended with {} before connecting (log: {}):\n{}",
                                   bridge_->exit_status().describe(), options.log_file.string(), bridge_->log_excerpt(2000)));
  }
  json ready = json::parse(line, nullptr, false);
  if (ready.value("event", "") != "ready") {
    bridge_->finish(std::chrono::seconds(30));
    throw InputError(ready.is_object() ? ready.value("message", line) : line);
  }
  address_ = ready.value("address", "");
  nodes_ = ready.value("nodes", 0);
  device_units_ = ready.value("device_units", 0.0);
  io_ = std::thread([this] { pump(); });
}

RayExecutor::~RayExecutor() {
  stopping_ = true;
  if (io_.joinable()) io_.join();
  // Closing its stdin tells the bridge to cancel what is left and disconnect (or stop the local instance).
  bridge_->finish(std::chrono::seconds(60));
}

void RayExecutor::lose(const std::string& reason) {
  lost_ = reason;
  for (auto& [id, reply] : waiting_) reply.set_exception(std::make_exception_ptr(ExecutorLost(reason)));
  waiting_.clear();
}

void RayExecutor::pump() {
  while (!stopping_) {
    {
      std::lock_guard lock(mutex_);
      if (!lost_.empty()) return;
      for (; !outbox_.empty(); outbox_.pop_front())
        if (!bridge_->send_line(outbox_.front())) break;
    }
    std::string line;
    WaitOutcome outcome = bridge_->wait_line(Clock::now() + std::chrono::milliseconds(100), &line);
    if (outcome == WaitOutcome::kTimeout) continue;
    std::lock_guard lock(mutex_);
    if (outcome != WaitOutcome::kReply) {
      bridge_->finish(std::chrono::milliseconds(0));
      lose(fmt::format("the Ray bridge ended with {} (log: {})", bridge_->exit_status().describe(),
                       options_.log_file.string()));
      return;
    }
    json reply = json::parse(line, nullptr, false);
    auto it = reply.is_object() ? waiting_.find(reply.value("id", std::int64_t{-1})) : waiting_.end();
    if (it == waiting_.end()) {
      spdlog::warn("ray: unexpected line from the bridge: {}", line.substr(0, 200));
      continue;
    }
    it->second.set_value(std::move(reply));
    waiting_.erase(it);
  }
}

ExecutedEval RayExecutor::evaluate(const EvalOptions& options, bool /*alone: the resources say it*/) {
  ExecutedRequest done = run_request(make_eval_request(options));
  return {EvalResult{std::move(done.result)}, std::move(done.node)};
}

ExecutedRequest RayExecutor::run_request(const json& request) {
  // A pair is a timing of two candidates: it holds a whole device, as a timing does.
  const bool timing = is_pair_request(request) || request.value("timing", false);
  json submit = {{"op", "submit"}, {"resources", ray_resources(options_.device_kind, timing)}, {"request", request}};
  std::future<json> reply;
  {
    std::lock_guard lock(mutex_);
    if (!lost_.empty()) throw ExecutorLost(lost_);
    submit["id"] = next_id_;
    reply = waiting_[next_id_++].get_future();
    outbox_.push_back(submit.dump());
  }
  json r = reply.get();
  if (r.value("event", "") != "result")
    throw std::runtime_error(r.value("message", "the Ray task failed without a message"));
  return {r.at("result"), r.value("node", "")};
}

}  // namespace kforge::bench
