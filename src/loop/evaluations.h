// Where the refinement loop's evaluations run. `kforge run` evaluates in its own process on this
// host's devices (LocalEvaluations: a worker pool whose next candidate processes start while the
// model writes). A `--llm` bench with `--executor ray` hands them to the bench, which runs each as a
// Ray task (bench/relayed_evaluations.h). Either way the loop, the store and every model call stay
// in the run's process (docs/bench.md#executors).
#pragma once

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"
#include "eval/eval_result.h"
#include "eval/eval_run.h"
#include "eval/worker_pool.h"
#include "loop/keep_decision.h"
#include "profile/profiler.h"

namespace kforge::loop {

// The evaluations can run nothing more (the bench that ran them is gone): the run stops as
// interrupted, to be resumed, rather than recording a failure that is not the candidate's.
class EvaluationsLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An evaluation could not run (e.g. a Ray node refused it); the message says why. The run fails.
class EvaluationFailed : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Evaluations {
 public:
  virtual ~Evaluations() = default;
  // One evaluation of options.candidate (a check, or a timing when options.timing). Called from
  // several threads at once.
  virtual EvalResult evaluate(const EvalOptions& options, ProgressFn progress, void* user) = 0;
  // `best` and `challenger` timed head to head (loop/pair_timing.h).
  virtual PairMeasurement measure_pair(const EvalOptions& options, const std::filesystem::path& best,
                                       const std::filesystem::path& challenger, ProgressFn progress, void* user) = 0;
  // A profile of options.eval.candidate (profile/profiler.h); throws when none can be taken.
  virtual nlohmann::json profile(const profile::ProfileOptions& options, ProgressFn progress, void* user) = 0;
};

// On this host, in this process. The reference process is kept across the run's evaluations, and
// up to `spare_candidates` candidate processes start ahead, while the model writes the next ones.
class LocalEvaluations : public Evaluations {
 public:
  explicit LocalEvaluations(int spare_candidates) : workers_(spare_candidates) {}
  EvalResult evaluate(const EvalOptions& options, ProgressFn progress, void* user) override;
  PairMeasurement measure_pair(const EvalOptions& options, const std::filesystem::path& best,
                               const std::filesystem::path& challenger, ProgressFn progress, void* user) override;
  nlohmann::json profile(const profile::ProfileOptions& options, ProgressFn progress, void* user) override;

 private:
  WorkerPool workers_;
};

}  // namespace kforge::loop
