#include "eval/speed_claim.h"

#include <fmt/format.h>

namespace kforge {

using json = nlohmann::json;

namespace {

std::optional<SpeedInterval> interval(const std::optional<RecordedSpeedup>& estimate, std::optional<double> ratio) {
  if (estimate && estimate->point && *estimate->point > 0) {
    const double p = *estimate->point;
    return SpeedInterval{p, estimate->ci_low.value_or(p), estimate->ci_high.value_or(p), estimate->rounds};
  }
  if (ratio && *ratio > 0) return SpeedInterval{*ratio, *ratio, *ratio, 0};
  return std::nullopt;
}

// Fewer than three rounds establish nothing (eval/speedup.h).
bool above(const SpeedInterval& s) { return s.rounds >= 3 && s.low > 1.0; }
bool below(const SpeedInterval& s) { return s.rounds >= 3 && s.high < 1.0; }

}  // namespace

std::string SpeedInterval::text() const {
  if (rounds == 0) return fmt::format("{:.2f}x (no interval)", point);
  return fmt::format("{:.2f}x [{:.2f}, {:.2f}]", point, low, high);
}

std::optional<double> sol_fraction_of(const EvalView& v) {
  if (!v.sol) return std::nullopt;
  if (v.sol->fraction) return v.sol->fraction;
  if (v.sol->percent) return *v.sol->percent / 100.0;
  // Otherwise from the bound and the measured time.
  const std::optional<TimingStats> c = v.timing ? v.timing->candidate : std::nullopt;
  if (v.sol->bound_ms && c && c->median_ms > 0) return *v.sol->bound_ms / c->median_ms;
  return std::nullopt;
}
std::optional<double> sol_fraction_of(const json& doc) { return sol_fraction_of(EvalView::decode(doc)); }

SpeedClaim speed_claim(const json& doc) { return speed_claim(EvalView::decode(doc)); }

SpeedClaim speed_claim(const EvalView& v) {
  SpeedClaim c;
  c.vs_eager = interval(v.recorded_speedup_vs_eager, v.speedup_vs_eager);
  c.vs_compile = interval(v.recorded_speedup_vs_compile, v.speedup_vs_compile);
  c.sol_fraction = sol_fraction_of(v);
  if (!c.vs_eager && !c.vs_compile) return c;
  // The faster baseline is the one the candidate gains least over.
  const bool compile = c.vs_compile && (!c.vs_eager || c.vs_compile->point < c.vs_eager->point);
  c.faster_baseline = compile ? "torch.compile" : "eager";
  c.vs_faster = compile ? c.vs_compile : c.vs_eager;
  bool all_above = true, any_below = false;
  for (const auto* s : {&c.vs_eager, &c.vs_compile}) {
    if (!*s) continue;
    all_above = all_above && above(**s);
    any_below = any_below || below(**s);
  }
  c.verdict = all_above ? SpeedVerdictKind::kFaster
              : any_below ? SpeedVerdictKind::kSlower
                          : SpeedVerdictKind::kInconclusive;
  return c;
}

std::string SpeedClaim::verdict_name() const {
  switch (verdict) {
    case SpeedVerdictKind::kFaster: return "faster";
    case SpeedVerdictKind::kSlower: return "slower";
    case SpeedVerdictKind::kInconclusive: return "inconclusive";
    case SpeedVerdictKind::kUntimed: break;
  }
  return "untimed";
}

std::string SpeedClaim::figures() const {
  if (!vs_faster) return "not timed";
  std::string out;
  if (vs_eager && vs_compile) {
    const bool compile = faster_baseline == "torch.compile";
    const SpeedInterval& other = compile ? *vs_eager : *vs_compile;
    out = fmt::format("{} vs {} (the faster baseline), {} vs {}", vs_faster->text(), faster_baseline, other.text(),
                      compile ? "eager" : "torch.compile");
  } else {
    out = fmt::format("{} vs {}", vs_faster->text(), faster_baseline);
  }
  if (vs_faster->rounds > 0) out += " (95% confidence intervals)";
  out += sol_fraction ? fmt::format("; {:.3g}% of speed of light", 100 * *sol_fraction) : "; no speed-of-light figure";
  return out;
}

std::string SpeedClaim::advice() const {
  switch (verdict) {
    case SpeedVerdictKind::kFaster:
      return "Faster than PyTorch: every interval is above 1.";
    case SpeedVerdictKind::kSlower:
      return "Slower than PyTorch beyond the noise: keep using PyTorch for this problem.";
    case SpeedVerdictKind::kInconclusive:
      return "Inconclusive: an interval includes 1 (or fewer than three timing rounds ran), so the measurement cannot "
             "tell it from PyTorch. Measure again "
             "before choosing (an idle machine, more repetitions: `kforge eval ... --reps N`).";
    case SpeedVerdictKind::kUntimed: break;
  }
  return "No speed was measured.";
}

json SpeedClaim::to_json() const {
  auto one = [](const std::optional<SpeedInterval>& s) {
    return s ? json{{"point", s->point}, {"ci_low", s->low}, {"ci_high", s->high}, {"rounds", s->rounds}} : json();
  };
  return {{"verdict", verdict_name()},     {"faster_baseline", faster_baseline}, {"vs_faster", one(vs_faster)},
          {"vs_eager", one(vs_eager)},     {"vs_compile", one(vs_compile)},
          {"sol_fraction", sol_fraction ? json(*sol_fraction) : json()}};
}

}  // namespace kforge
