// The numbers a bench is judged by, computed from per-problem outcomes only (pure functions), so
// they are unit-tested and the same for `kforge bench` at its end and `kforge report` later.
//
// Definitions (docs/bench.md):
//   correctness rate      correct problems / all problems
//   fast_p                problems that are correct AND faster than the baseline by more than p,
//                         over all problems (so fast_0 is the correctness rate)
//   geomean (all)         geometric mean of the speedups over all problems, a failed problem
//                         counting as 1.0 (the user keeps PyTorch)
//   geomean (correct)     geometric mean over the correct problems only
// Problems whose speed class is not "standard" (an algebraically cheaper rewrite, a degenerate
// problem: docs/checks.md) are kept out of fast_p and the geomeans, numerator and denominator, and
// counted separately; they still count in the correctness rate.
// Baselines: eager PyTorch, torch.compile, and the faster of the two for each problem.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::report {

enum class Baseline { kEager, kCompile, kFaster };
const char* baseline_name(Baseline b);  // "eager", "compile", "faster"

// What the metrics need of one problem's result.
struct ProblemResult {
  bool correct = false;
  std::optional<double> speedup_vs_eager;    // baseline median / candidate median
  std::optional<double> speedup_vs_compile;
  std::optional<double> sol_pct;             // candidate's % of speed-of-light
  bool unstable = false;                     // some timing's IQR over kUnstableIqrRel of its median
  std::string speed_class = "standard";      // "standard", "algebraically_cheaper", "degenerate"
};

// Whether a problem's speedups take part in fast_p and the geomeans.
bool in_speed_metrics(const ProblemResult& r);

// Reads the fields above from an outcome document (src/bench/outcome.h).
ProblemResult problem_result_from_json(const nlohmann::json& outcome);

// The speedup against a baseline; for kFaster the smaller of the two (the faster baseline wins),
// or the eager one when torch.compile was not measured. nullopt when not measured.
std::optional<double> speedup_against(const ProblemResult& r, Baseline b);

// Share (0..1) of all problems that are correct with a speedup > p. A correct problem whose
// baseline was not measured does not count as fast. 0 for an empty suite.
double fast_p(const std::vector<ProblemResult>& results, double p, Baseline b);

// Geometric mean of the speedups. correct_only=false: over all problems, failed (or unmeasured)
// ones counting as 1.0. correct_only=true: over correct, measured problems only. nullopt when
// there is nothing to average.
std::optional<double> geomean_speedup(const std::vector<ProblemResult>& results, Baseline b, bool correct_only);

// The 25th, 50th and 75th percentiles of the per-problem speedups over the correct, measured
// problems in the speed metrics (the spread behind a geometric mean); nullopt when there are none.
struct Quartiles {
  double p25 = 0, median = 0, p75 = 0;
};
std::optional<Quartiles> speedup_quartiles(const std::vector<ProblemResult>& results, Baseline b);

// Median % of speed-of-light over the correct problems that have the figure.
std::optional<double> median_sol_pct(const std::vector<ProblemResult>& results);

// All metrics as one JSON object: correct, problems, correctness_rate, fast_p (per baseline, for
// p in {0, 1, 1.5, 2}), geomean_speedup (per baseline: all_problems, correct_only), speedup_quartiles
// (per baseline: p25, median, p75, or null), unstable (how many correct problems have an unstable
// timing), median_sol_pct, and which baselines were measured; separate_speed_classes counts the
// problems kept out of the speed metrics.
nlohmann::json compute_metrics(const std::vector<ProblemResult>& results);

// The p values the reports list.
const std::vector<double>& reported_p_values();

}  // namespace kforge::report
