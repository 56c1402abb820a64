// How `kforge bench --llm` and `kforge model` run their `kforge run` children: a bounded number at
// once over the given devices (schedule), each child to its end with its evaluations relayed through
// the executor when the executor relays runs (run_child_run; Ray: docs/bench.md#executors).
#pragma once

#include <cstddef>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "bench/executor.h"
#include "llm/cancel.h"
#include "util/subprocess.h"

namespace kforge::bench {

struct ScheduleOptions {
  int jobs = 1;                               // tasks in progress at once (at most `count`)
  std::vector<std::string> devices = {"cpu"};  // worker k uses devices[k % size]
  const llm::CancelFlag* cancel = nullptr;    // no task starts once it is set
};

// Runs task(i, device) for i = 0..count-1, in order of i, with at most `jobs` in progress at once,
// and returns when every worker has stopped. A task returns false to stop the schedule: no task
// starts after it, and those in progress run to their ends. Tasks run on threads of their own.
void schedule(std::size_t count, const ScheduleOptions& options,
              const std::function<bool(std::size_t index, const std::string& device)>& task);

struct ChildRunResult {
  ExitStatus exit;           // how the `kforge run` process ended
  bool interrupted = false;  // it was sent SIGINT at the cancel flag (it stops after its current step)
  std::string lost;          // relayed: why the executor can run nothing more; empty while it can
  std::string node;          // relayed: where its latest evaluation ran
};

// Runs `argv` (a `kforge run` command line) to its end with its output in `log_file`. With an
// executor that relays runs the child gets --relay-evaluations and each evaluation it asks for runs
// through `executor` (bench/evaluation_relay.h); otherwise it evaluates in its own processes.
ChildRunResult run_child_run(std::vector<std::string> argv, const std::filesystem::path& log_file, Executor* executor,
                             const llm::CancelFlag* cancel);

// Whether runs started with `executor` send their evaluations to it.
inline bool relays_runs(const Executor* executor) { return executor && executor->relays_runs(); }

}  // namespace kforge::bench
