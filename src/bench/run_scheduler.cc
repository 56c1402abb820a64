#include "bench/run_scheduler.h"

#include <csignal>

#include <algorithm>
#include <atomic>
#include <optional>
#include <thread>

#include "bench/evaluation_relay.h"
#include "util/environment.h"

namespace kforge::bench {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

void schedule(std::size_t count, const ScheduleOptions& options,
              const std::function<bool(std::size_t, const std::string&)>& task) {
  if (count == 0) return;
  const int jobs = std::max(1, std::min<int>(options.jobs, static_cast<int>(count)));
  const std::vector<std::string> devices = options.devices.empty() ? std::vector<std::string>{"cpu"} : options.devices;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stopped{false};
  auto work = [&](const std::string& device) {
    while (!stopped && !llm::is_cancelled(options.cancel)) {
      const std::size_t i = next.fetch_add(1);
      if (i >= count) return;
      if (!task(i, device)) {
        stopped = true;
        return;
      }
    }
  };
  std::vector<std::thread> workers;
  for (int k = 0; k < jobs; ++k) workers.emplace_back(work, devices[k % devices.size()]);
  for (auto& w : workers) w.join();
}

ChildRunResult run_child_run(std::vector<std::string> argv, const fs::path& log_file, Executor* executor,
                             const llm::CancelFlag* cancel) {
  SpawnOptions spawn;
  spawn.argv = std::move(argv);
  // The run's evaluations come here and go through the executor (bench/evaluation_relay.h).
  std::optional<EvaluationRelay> relay;
  if (relays_runs(executor)) {
    relay.emplace(*executor);
    spawn.argv.push_back("--relay-evaluations");
  }
  spawn.env = current_environment();
  spawn.log_cap_bytes = 1ull << 30;
  if (!log_file.empty()) {
    fs::create_directories(log_file.parent_path());
    spawn.log_file = log_file;
  }
  auto child = Subprocess::spawn(spawn);
  ChildRunResult out;
  std::string line;
  while (true) {
    if (relay) relay->deliver([&](const std::string& answer) { return child->send_line(answer); });
    auto outcome = child->wait_line(Clock::now() + std::chrono::milliseconds(relay ? 50 : 200), &line);
    if (outcome == WaitOutcome::kExited) break;
    if (outcome == WaitOutcome::kReply && relay) relay->handle(line);
    if (llm::is_cancelled(cancel) && !out.interrupted) {
      ::kill(child->pid(), SIGINT);  // the run stops after its current step and can be resumed
      out.interrupted = true;
    }
  }
  child->finish(std::chrono::milliseconds(0));
  out.exit = child->exit_status();
  if (relay) {
    out.lost = relay->lost();
    out.node = relay->last_node();
    relay.reset();  // waits for requests the run no longer waits for
  }
  return out;
}

}  // namespace kforge::bench
