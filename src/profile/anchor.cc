// anchor_to_evaluation (see anchor.h).
#include "profile/anchor.h"

#include <filesystem>

#include "profile/analysis.h"
#include "profile/profiler.h"

namespace kforge::profile {

using json = nlohmann::json;

void anchor_to_evaluation(json& profile, const EvalView& evaluation) {
  if (!profile.is_object() || profile.contains("error") || !profile.contains("sides")) return;
  if (evaluation.sol && evaluation.sol->sol_ms) profile["sol"] = evaluation.sol->as_written;
  const json sol = profile.value("sol", json::object());
  const auto median_of = [](const std::optional<RecordedTiming>& t) { return t ? t->median_ms.value_or(0.0) : 0.0; };
  bool anchored = false;
  for (auto [name, median] : {std::pair{"candidate", median_of(evaluation.recorded.candidate)},
                              std::pair{"reference", median_of(evaluation.recorded.eager)}}) {
    if (!profile["sides"].contains(name)) continue;
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
