#include "bench/outcome_fields.h"

#include <algorithm>

#include "eval/timing_stats.h"

namespace kforge::bench {

using json = nlohmann::json;

std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 200 ? line.substr(0, 197) + "..." : line;
}

void add_stability(json& o, const json& spread) {
  o["timing_spread"] = spread.is_object() ? spread : json::object();
  std::optional<double> worst;
  for (const auto& [_, s] : o["timing_spread"].items())
    if (s.contains("iqr_rel") && s["iqr_rel"].is_number()) worst = std::max(worst.value_or(0.0), s["iqr_rel"].get<double>());
  o["max_iqr_rel"] = worst ? json(*worst) : json();
  o["unstable"] = worst && *worst > kUnstableIqrRel;
}

void add_claim(json& o, const std::string& verdict, const std::optional<SpeedInterval>& vs_eager,
               const std::optional<SpeedInterval>& vs_compile) {
  o["speed_verdict"] = verdict;
  for (const auto& [b, s] : {std::pair{"eager", &vs_eager}, std::pair{"compile", &vs_compile}})
    if (*s && (*s)->rounds > 0) o[std::string("speedup_vs_") + b + "_ci"] = json::array({(*s)->low, (*s)->high});
}

}  // namespace kforge::bench
