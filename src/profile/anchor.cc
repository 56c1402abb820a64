// anchor_to_evaluation (see anchor.h).
#include "profile/anchor.h"

#include <filesystem>

#include "profile/analysis.h"
#include "profile/profiler.h"

namespace kforge::profile {

using json = nlohmann::json;

namespace {

double median_of(const json& timing, const char* side) {
  const json t = timing.value(side, json::object());
  const json m = t.is_object() ? t.value("median_ms", json()) : json();
  return m.is_number() ? m.get<double>() : 0.0;
}

}  // namespace

void anchor_to_evaluation(json& profile, const json& evaluation) {
  if (!profile.is_object() || profile.contains("error") || !profile.contains("sides") || !evaluation.is_object()) return;
  const json timing = evaluation.value("timing", json::object());
  if (!timing.is_object()) return;
  const json eval_sol = evaluation.value("sol", json());
  if (eval_sol.is_object() && eval_sol.value("sol_ms", json()).is_number()) profile["sol"] = eval_sol;
  const json sol = profile.value("sol", json::object());
  bool anchored = false;
  for (auto [name, timing_side] : {std::pair{"candidate", "candidate"}, std::pair{"reference", "eager"}}) {
    if (!profile["sides"].contains(name)) continue;
    const double median = median_of(timing, timing_side);
    if (median <= 0) continue;
    json& side = profile["sides"][name];
    const json before = side.value("achieved", json::object());
    if (before.value("median_ms", json()).is_number()) side["profiled_ms"] = before["median_ms"];
    side["achieved"] = achieved(median, sol);
    side["achieved"]["source"] = "evaluation";
    anchored = true;
  }
  if (!anchored) return;
  const std::string chart = profile.value("chart", "");
  finish_profile(profile, chart.empty() ? std::filesystem::path() : std::filesystem::path(chart));
}

}  // namespace kforge::profile
