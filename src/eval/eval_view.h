// The one decoder of EvalResult documents (docs/eval-result.md) into typed structs. Everything that
// reads an EvalResult (the terminal summary, the speed claim, the bench outcome, the agent's
// feedback, the run's decisions) reads these fields, so a renamed field is changed here and nowhere
// else (src/eval/eval_result_readers_test.cc keeps it so).
//
// A part that is absent (or null) reads as "not there": nullopt, empty, or the default named below.
// A part of the wrong type throws EvalResultError naming the field: EvalResults come from kforge's
// trusted side, so a wrong type is a bug to report, not a value to guess.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/timing_stats.h"

namespace kforge {

// "EvalResult field `timing.candidate.median_ms` is a string, expected a number".
class EvalResultError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct EvalError {
  std::string kind, message, log, log_path;
};

struct CheckEntry {
  std::string name, verdict, message;
};

// correctness.mismatch. The figures stay the scalars the checker wrote (integer or float, or a
// list of integers for index and shapes), so they print as written; absent ones are null.
struct MismatchView {
  std::string message, path, reason, shape_tag;
  nlohmann::json max_abs_error, max_rel_error, index, shape, expected_shape, expected, got, mismatched, atol, trial;
};

struct CorrectnessView {
  bool ran = false;  // any trial was run
  int trials = 0, trials_passed = 0;
  double max_abs_error = 0, max_rel_error = 0;
  std::optional<int> shapes_checked;
  std::optional<MismatchView> mismatch;  // on `incorrect`
};

struct TimingView {
  std::optional<TimingStats> candidate, eager, compile;  // in ms
  std::optional<std::string> compile_error;  // why torch.compile was not timed
  std::optional<double> fresh_inputs_ms;     // re-measured on fresh inputs
  int threads = 0;
};

// What timing.<which> recorded (median_ms, p25_ms, p75_ms, iqr_rel), whether or not the candidate
// was timed: a candidate that failed during timing still has its baselines' figures.
struct RecordedTiming {
  std::optional<double> median_ms, p25_ms, p75_ms, iqr_rel;
};
struct RecordedTimings {
  std::optional<RecordedTiming> candidate, eager, compile;  // present where timing.<which> is an object
  std::optional<int> threads;                               // timing.threads, where timing ran
};

// speedup.vs_eager / vs_compile: the evaluator's interleaved estimate (eval/speedup.h).
struct RecordedSpeedup {
  std::optional<double> point, ci_low, ci_high;
  int rounds = 0;
};

// sol.routes: a route the bound's FLOPs could take and its rate.
struct SolRoute {
  std::string route;
  std::optional<double> peak_flops_per_s;
};

// sol: the speed-of-light figures a fraction is read from (eval/speed_claim.h) and the bound's
// description (loop/problem_facts.h).
struct SolView {
  std::optional<double> fraction;  // the first of fraction, achieved_fraction, fraction_of_sol, efficiency
  std::optional<double> percent;   // the first of candidate_pct_of_sol, percent
  std::optional<double> bound_ms;  // bound_ms, else sol_ms
  std::optional<double> sol_ms, candidate_pct_of_sol, remeasured_pct_of_sol;
  // The candidate was re-measured on fresh inputs (remeasured_pct_of_sol is there, null when the
  // re-measured time was 0 and the percentage infinite).
  bool remeasured = false;
  std::string route;  // the fastest route the precision policy allows, where named
  std::vector<SolRoute> routes;  // every route considered, the fastest included
  std::optional<std::string> bound;  // "memory" or "compute"
  std::optional<double> bytes, bandwidth_bytes_per_s, eager_pct_of_sol;
  std::optional<std::string> note;
  // The object as the worker wrote it (its sol.py document): the bound's words (eval/sol_text.h) and
  // the profile (profile/anchor.h) read it as they read the baseline's and the profiler's, which
  // are the same document.
  nlohmann::json as_written;
};

struct LibraryCallsView {
  std::vector<std::string> operators;  // allowed library operators the candidate ran
  std::optional<double> share;         // their share of the candidate's time, where measured
  nlohmann::json as_written;           // as recorded, with how the share was measured (a decision keeps it)
};

struct MemoryView {
  std::optional<std::uint64_t> estimate_bytes;  // null: unknown, so it ran alone
  int processes = 2;
  std::uint64_t budget_bytes = 0;
  double waited_seconds = 0;
  std::vector<std::string> retry_statuses;  // of the tries that ran out of memory beside others
};

struct EvalView {
  std::string status, target, device, precision;
  std::string problem, problem_sha256, candidate_sha256;  // what was evaluated ("" where not recorded)
  bool correct = false;
  std::optional<EvalError> error;
  CorrectnessView correctness;
  std::vector<CheckEntry> checks;
  std::optional<TimingView> timing;  // present when the candidate was timed
  RecordedTimings recorded;
  std::optional<double> speedup_vs_eager, speedup_vs_compile;
  std::optional<RecordedSpeedup> recorded_speedup_vs_eager, recorded_speedup_vs_compile;
  std::optional<std::string> speed_class;
  std::optional<SolView> sol;
  std::optional<LibraryCallsView> library_calls;  // present when the evaluation reported them
  std::optional<MemoryView> memory;               // present when memory was reserved for it
  std::optional<std::string> torch;               // env.torch ("" unknown); nullopt without env
  std::optional<std::string> isolation;           // env.isolation: "bubblewrap" or the fallback and why
  std::vector<std::string> notes;
  double wall_seconds = 0;

  // Throws EvalResultError for a field of the wrong type; a doc that is not an object (null,
  // nothing stored) decodes as empty.
  static EvalView decode(const nlohmann::json& doc);
};

// An EvalResult's `error` object (as a head-to-head's contender keeps it, eval/head_to_head.h);
// nullopt when it is absent, null or empty.
std::optional<EvalError> decode_error(const nlohmann::json& error);

// The status alone (EvalResult::status() reads it for every decision), nullopt when absent.
std::optional<std::string> decode_status(const nlohmann::json& doc);

// A timing summary written by to_json(TimingStats); nullopt when `j` is not one.
std::optional<TimingStats> decode_timing_stats(const nlohmann::json& j);

}  // namespace kforge
