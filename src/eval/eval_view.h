// A typed view of an EvalResult document (docs/eval-result.md), decoded once: readers use fields
// rather than JSON keys, and a document missing a part reads as "not there" (nullopt, empty).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/timing_stats.h"

namespace kforge {

struct EvalError {
  std::string kind, message, log, log_path;
};

struct CheckEntry {
  std::string name, verdict, message;
};

struct CorrectnessView {
  bool ran = false;  // any trial was run
  int trials = 0, trials_passed = 0;
  double max_abs_error = 0, max_rel_error = 0;
  std::optional<int> shapes_checked;
  std::optional<std::string> mismatch;  // the first mismatch's message
};

struct TimingView {
  std::optional<TimingStats> candidate, eager, compile;  // in ms
  std::optional<std::string> compile_error;              // why torch.compile was not timed
  std::optional<double> fresh_inputs_ms;                 // re-measured on fresh inputs
  int threads = 0;
};

struct EvalView {
  std::string status, target, device, precision;
  std::optional<EvalError> error;
  CorrectnessView correctness;
  std::vector<CheckEntry> checks;
  std::optional<TimingView> timing;  // present when the candidate was timed
  std::optional<double> speedup_vs_eager, speedup_vs_compile;
  std::vector<std::string> notes;
  std::vector<std::string> library_calls;  // allowed library operators the candidate ran
  std::optional<double> library_share;     // their share of the candidate's time, where measured
  double wall_seconds = 0;

  static EvalView decode(const nlohmann::json& doc);
};

// A timing summary written by to_json(TimingStats); nullopt when `j` is not one.
std::optional<TimingStats> decode_timing_stats(const nlohmann::json& j);

}  // namespace kforge
