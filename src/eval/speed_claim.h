// One claim, one number, one rule. What kforge says about a candidate's speed against PyTorch, read
// from its EvalResult in one place, so the verdict, `kforge eval`'s and `kforge run`'s output, the
// reports (Markdown, JSON, HTML) and the bench report show the same figures and draw the same
// conclusion:
//   - a speedup is the evaluator's estimate over interleaved rounds (the median of the per-round
//     ratios baseline / candidate) with its 95% bootstrap interval (eval/speedup.h);
//   - against PyTorch means against each baseline measured (eager, torch.compile): the candidate is
//     faster only when the lower end of every interval is above 1, slower when the upper end of one
//     is below 1, and otherwise the result is inconclusive (measure again);
//   - the fraction of the speed-of-light bound comes with it where the evaluation had one.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_view.h"

namespace kforge {

struct SpeedInterval {
  double point = 0, low = 0, high = 0;
  int rounds = 0;  // 0: a point without an interval (an old result, or blocks that did not pair)
  std::string text() const;  // "1.43x [0.82, 1.54]", or "1.43x (no interval)"
};

enum class SpeedVerdictKind { kUntimed, kFaster, kSlower, kInconclusive };

struct SpeedClaim {
  std::optional<SpeedInterval> vs_eager, vs_compile;
  std::string faster_baseline;             // "eager" or "torch.compile": the one the candidate is closest to
  std::optional<SpeedInterval> vs_faster;  // the speedup over that baseline
  std::optional<double> sol_fraction;      // of the speed-of-light bound (0.062: 6.2%)
  SpeedVerdictKind verdict = SpeedVerdictKind::kUntimed;

  bool faster() const { return verdict == SpeedVerdictKind::kFaster; }
  // "faster", "slower", "inconclusive", "untimed".
  std::string verdict_name() const;
  // One line: "1.43x [0.82, 1.54] vs torch.compile (the faster baseline), 2.10x [1.90, 2.31] vs eager
  // (95% confidence intervals); 6.2% of speed of light".
  std::string figures() const;
  // One sentence on what to do: keep the kernel, keep PyTorch, or measure again.
  std::string advice() const;
  nlohmann::json to_json() const;
};

SpeedClaim speed_claim(const EvalView& eval);
SpeedClaim speed_claim(const nlohmann::json& eval_doc);

// The fraction of speed-of-light reached, when the EvalResult has `sol` figures.
std::optional<double> sol_fraction_of(const EvalView& eval);
std::optional<double> sol_fraction_of(const nlohmann::json& eval_doc);

}  // namespace kforge
