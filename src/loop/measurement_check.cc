#include "loop/measurement_check.h"

#include <fmt/format.h>

#include "eval/eval_view.h"
#include "loop/speed_compare.h"

namespace kforge::loop {

using json = nlohmann::json;

MeasurementFlags check_measurement(const json& doc, double max_iqr_rel) {
  MeasurementFlags m;
  const EvalView v = EvalView::decode(doc);
  if (v.sol) {
    const SolView& sol = *v.sol;
    // After a fresh-input re-measurement the evaluator keeps both figures; the later one counts.
    const std::optional<double> pct = sol.remeasured ? sol.remeasured_pct_of_sol : sol.candidate_pct_of_sol;
    if (pct && *pct > 100.0) {
      m.flags.push_back("over_bound");
      // The bound is the fastest route the precision policy allows (sol.py's flop_routes): beyond it
      // no allowed route could go, whatever the kernel does.
      m.reasons.push_back(fmt::format("{:.0f}% of its speed-of-light bound ({:.3g} ms{}): faster than any route the "
                                      "precision policy allows could run, so the bound or the measurement is wrong",
                                      *pct, sol.sol_ms.value_or(0.0), sol.route.empty() ? "" : ", " + sol.route));
    }
  }
  if (const auto& cand = v.recorded.candidate; cand && cand->iqr_rel) {
    const double iqr = *cand->iqr_rel;
    if (iqr > max_iqr_rel) {
      m.flags.push_back("unstable");
      m.reasons.push_back(fmt::format("interquartile range {:.0f}% of the median (p25 {:.3g} ms, p75 {:.3g} ms), "
                                      "above {:.0f}%",
                                      100 * iqr, cand->p25_ms.value_or(0.0), cand->p75_ms.value_or(0.0), 100 * max_iqr_rel));
    }
  }
  return m;
}

bool sol_stop_reached(const json& doc, double sol_stop) {
  if (sol_stop <= 0 || check_measurement(doc).any()) return false;
  auto f = sol_fraction(doc);
  return f && *f >= sol_stop;
}

}  // namespace kforge::loop
