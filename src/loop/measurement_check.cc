#include "loop/measurement_check.h"

#include <fmt/format.h>

#include "loop/speed_compare.h"

namespace kforge::loop {

using json = nlohmann::json;

MeasurementFlags check_measurement(const json& doc, double max_iqr_rel) {
  MeasurementFlags m;
  if (!doc.is_object()) return m;
  const json sol = doc.value("sol", json());
  if (sol.is_object()) {
    // After a fresh-input re-measurement the evaluator keeps both figures; the later one counts.
    const char* key = sol.contains("remeasured_pct_of_sol") ? "remeasured_pct_of_sol" : "candidate_pct_of_sol";
    const json pct = sol.value(key, json());
    if (pct.is_number() && pct.get<double>() > 100.0) {
      m.flags.push_back("over_bound");
      // The bound is the fastest route the precision policy allows (sol.py's flop_routes): beyond it
      // no allowed route could go, whatever the kernel does.
      const std::string route = sol.value("route", "");
      m.reasons.push_back(fmt::format("{:.0f}% of its speed-of-light bound ({:.3g} ms{}): faster than any route the "
                                      "precision policy allows could run, so the bound or the measurement is wrong",
                                      pct.get<double>(), sol.value("sol_ms", 0.0), route.empty() ? "" : ", " + route));
    }
  }
  const json cand = doc.value("timing", json::object()).value("candidate", json());
  if (cand.is_object() && cand.value("iqr_rel", json()).is_number()) {
    const double iqr = cand["iqr_rel"].get<double>();
    if (iqr > max_iqr_rel) {
      m.flags.push_back("unstable");
      m.reasons.push_back(fmt::format("interquartile range {:.0f}% of the median (p25 {:.3g} ms, p75 {:.3g} ms), "
                                      "above {:.0f}%",
                                      100 * iqr, cand.value("p25_ms", 0.0), cand.value("p75_ms", 0.0), 100 * max_iqr_rel));
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
