// Two candidates of one problem timed against each other in one timing phase: the same inputs,
// the same thread count, blocks interleaved round by round with the eager reference, so a keep/
// reject decision between them does not depend on when each happened to be measured.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/eval_run.h"
#include "eval/speedup.h"
#include "eval/timing_stats.h"

namespace kforge {

struct ContenderTiming {
  std::string status;                      // empty: timed to the end; otherwise what stopped it
  nlohmann::json error;                    // {"kind", "message"} when stopped
  TimingStats stats;                       // over every kept repetition, in ms
  std::vector<double> block_medians_ms;    // one per round
  nlohmann::json to_json() const;
};

struct HeadToHead {
  ContenderTiming a, b;
  TimingStats eager;                        // the reference, timed in the same rounds
  std::vector<double> ratio_samples;        // per round: a's block median / b's (> 1: b was faster)
  SpeedupEstimate b_vs_a;                   // paired bootstrap over the rounds; b_vs_a.faster(): b wins
  int threads = 0;
  std::string problem_error;                // the reference failed: nothing was decided
  bool complete() const { return problem_error.empty() && a.status.empty() && b.status.empty(); }
  nlohmann::json to_json() const;
};

// Low level. `a` and `b` share one reference worker (a.ref == b.ref) and are prepared: problem and
// candidates loaded, main-shape trials passed, prepare_candidate_timing done for both, and the
// reference's baselines prepared (prepare_reference_timing) under `baseline`, a run that holds only
// the reference. Times a, b and eager interleaved; a candidate that fails a guard stops the timing
// and is reported in its ContenderTiming (and its run's status).
HeadToHead time_head_to_head(EvalRun& a, EvalRun& b, EvalRun& baseline, WorkerPool& pool);

// High level. Takes a reference and two candidate workers from `pool`, loads the problem
// (`options.problem`, its overrides, seed and device) and both candidates, runs `options.trials`
// checked trials of each (the timed outputs are checked against these trials' reference outputs, so
// at least one), and times them with `options`' warm-up, repetitions and block. No static checks or
// calibration run here: both candidates are expected to have passed evaluate() already. Logs go to
// options.log_dir/{a,b}.
HeadToHead compare_candidates(const EvalOptions& options, const std::filesystem::path& candidate_a,
                              const std::filesystem::path& candidate_b, WorkerPool& pool,
                              ProgressFn progress = nullptr, void* user = nullptr);

}  // namespace kforge
