// The history of every attempt of a run, compact enough to go into every prompt: step, verdict,
// speedups over eager and torch.compile and over the best (each with its confidence interval), any
// measurement flag, and the one-line idea of the candidate.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::loop {

// A speedup (> 1: faster) with its confidence interval.
struct Ratio {
  double point = 0, low = 0, high = 0;
  std::string text() const;  // "1.52x [1.40, 1.61]"
  nlohmann::json to_json() const;
};

// speedup.vs_eager / speedup.vs_compile of an EvalResult (the evaluator's interleaved confidence
// intervals), else the ratio of medians (speedup_vs_eager) with a point interval.
std::optional<Ratio> speedup_ratio(const nlohmann::json& doc, const std::string& baseline);

struct AttemptRecord {
  std::string step;
  int round = 0;
  std::string verdict;  // kept, rejected, undecided, first correct, or how it failed (compile_error, ...)
  std::optional<Ratio> vs_eager, vs_compile, vs_best;
  std::vector<std::string> flags;  // unstable, over_bound (measurement_check.h)
  std::string idea;
  nlohmann::json to_json() const;
};

// Table rows for the prompt templates: {step, verdict, vs_eager, vs_compile, vs_best, idea} as text;
// `verdict` carries the measurement flags ("kept, unstable"), `decision` is the verdict alone.
nlohmann::json history_rows(const std::vector<AttemptRecord>& history);

// At most `max_rows` of history_rows' rows, in order, so a round's request does not grow with the
// round: every attempt that became the best (decision "kept..."), then the most recent others.
// `omitted` gets how many were left out.
nlohmann::json recent_history_rows(const nlohmann::json& rows, std::size_t max_rows, std::size_t& omitted);

}  // namespace kforge::loop
