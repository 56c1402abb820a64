#include "bench/outcome.h"

#include <fmt/format.h>

#include "bench/outcome_fields.h"

namespace kforge::bench {

using json = nlohmann::json;

namespace {

// An interval as SpeedClaim::to_json wrote it into the accepted decision.
std::optional<SpeedInterval> interval(const json& s) {
  if (!s.is_object()) return std::nullopt;
  return SpeedInterval{s.value("point", 0.0), s.value("ci_low", 0.0), s.value("ci_high", 0.0), s.value("rounds", 0)};
}

}  // namespace

json outcome_from_run(const json& s) {
  const json best = s.value("best", json());
  bool correct = best.is_object();
  std::string run_status = s.value("status", "");
  json o = {{"status", correct ? "correct" : run_status == "finished" ? "no_correct_candidate" : "run_" + run_status},
            {"correct", correct},
            {"run_id", s.value("run_id", 0)},
            {"candidate_ms", correct ? best.value("median_ms", json()) : json()},
            {"eager_ms", correct ? best.value("eager_ms", json()) : json()},
            {"compile_ms", correct ? best.value("compile_ms", json()) : json()},
            {"speedup_vs_eager", correct ? best.value("speedup_vs_eager", json()) : json()},
            {"speedup_vs_compile", correct ? best.value("speedup_vs_compile", json()) : json()},
            {"sol_pct", correct && best.contains("sol_fraction") ? json(100.0 * best["sol_fraction"].get<double>())
                                                                 : json()},
            {"message", correct ? fmt::format("best {}; stopped: {}", best.value("step", ""), s.value("stop_reason", ""))
                                : first_line(s.value("verdict", ""))}};
  add_stability(o, correct ? best.value("timing_spread", json::object()) : json::object());
  if (correct && best.contains("speed_claim")) {
    const json& claim = best["speed_claim"];
    add_claim(o, claim.value("verdict", ""), interval(claim.value("vs_eager", json())), interval(claim.value("vs_compile", json())));
  }
  if (correct && best.contains("torch")) o["torch"] = best["torch"];
  json by_round = json::array();
  for (const auto& r : s.value("best_by_round", json::array())) by_round.push_back(r.value("speedup_vs_eager", json()));
  o["speedup_by_round"] = by_round;
  const json usage = s.value("usage", json::object());
  o["llm"] = {{"calls", usage.value("calls", 0)},
              {"input_tokens", usage.value("input_tokens", 0)},
              {"output_tokens", usage.value("output_tokens", 0)},
              {"cost_usd", usage.value("cost_usd", 0.0)}};
  if (s.contains("best_file")) o["best_file"] = s["best_file"];
  return o;
}

}  // namespace kforge::bench
