// Runs the unfinished problems of a bench with bounded concurrency and records each one in the
// store as it ends (docs/bench.md):
//   - `jobs` problems are in progress at once; worker k uses device k mod |devices|, so listed
//     GPUs are used at the same time;
//   - candidates mode evaluates each matched file through the bench's executor (in this process,
//     or as Ray tasks; bench/executor.h). On a GPU the evaluator itself times one evaluation per
//     device at a time (a per-GPU lock), while builds and correctness trials go on in parallel.
//     On the CPU, with jobs > 1, each problem is first checked without timing (in parallel) and
//     then timed alone: a timed evaluation waits until no other evaluation runs on its device;
//   - llm mode runs `kforge run --resume RUN` in a child process per problem, the run created
//     here with the bench's settings, so a killed bench resumes each run where it stopped.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "bench/bench_options.h"
#include "bench/bench_progress.h"
#include "bench/executor.h"
#include "eval/eval_options.h"
#include "llm/cancel.h"
#include "store/store.h"

namespace kforge::bench {

struct BenchContext {
  std::int64_t bench_id = 0;
  BenchOptions options;
  Store* store = nullptr;
  std::filesystem::path db_path;
  std::optional<std::filesystem::path> config_path;  // passed on to each `kforge run`
  EvalOptions eval_base;                             // candidates mode: all but candidate, device, log_dir, timing
  std::filesystem::path kforge_exe;                  // llm mode: the binary that runs each problem
  std::filesystem::path log_dir;                     // evaluation and run logs of this bench
  BenchProgress* progress = nullptr;
  Executor* executor = nullptr;                      // where evaluations run (llm mode: when it relays runs)
  const llm::CancelFlag* cancel = nullptr;
  double prior_wall_seconds = 0;                     // earlier sessions of a resumed bench
};

struct BenchOutcome {
  std::string status;  // finished, interrupted
  int done = 0, total = 0;
  double wall_seconds = 0;  // all sessions together
  std::string environment_error;  // why this machine cannot evaluate (the bench stopped at once)
};

BenchOutcome run_bench(BenchContext& ctx);

}  // namespace kforge::bench
