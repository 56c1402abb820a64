#include "bench/outcome.h"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "eval/eval_result.h"
#include "eval/speed_claim.h"
#include "eval/timing_stats.h"
#include "loop/speed_compare.h"

namespace kforge::bench {

using json = nlohmann::json;

namespace {

json median_of(const json& doc, const char* which) {
  const json timing = doc.value("timing", json::object());
  return timing.contains(which) && timing[which].is_object() ? timing[which].value("median_ms", json()) : json();
}

// The first line of a message, short enough for a table cell.
std::string first_line(const std::string& s) {
  std::string line = s.substr(0, s.find('\n'));
  return line.size() > 200 ? line.substr(0, 197) + "..." : line;
}

// The stability figures of an outcome from its timing spread: the largest relative IQR of the
// functions timed, and whether it passes the unstable threshold.
void add_stability(json& o, const json& spread) {
  o["timing_spread"] = spread.is_object() ? spread : json::object();
  std::optional<double> worst;
  for (const auto& [_, s] : o["timing_spread"].items())
    if (s.contains("iqr_rel") && s["iqr_rel"].is_number()) worst = std::max(worst.value_or(0.0), s["iqr_rel"].get<double>());
  o["max_iqr_rel"] = worst ? json(*worst) : json();
  o["unstable"] = worst && *worst > kUnstableIqrRel;
}

// The speed claim's verdict ("faster" only where every interval is above 1) and each interval,
// which the reports show beside the point estimates.
void add_claim(json& o, const json& claim) {
  o["speed_verdict"] = claim.value("verdict", "");
  for (const char* b : {"eager", "compile"}) {
    const json s = claim.value(std::string("vs_") + b, json());
    if (s.is_object() && s.value("rounds", 0) > 0)
      o[std::string("speedup_vs_") + b + "_ci"] = json::array({s.value("ci_low", 0.0), s.value("ci_high", 0.0)});
  }
}

}  // namespace

json outcome_from_evaluation(const json& doc, std::int64_t evaluation_id) {
  bool correct = doc.value("correct", false);
  json o = {{"status", doc.value("status", "")},
            {"correct", correct},
            {"candidate_ms", median_of(doc, "candidate")},
            {"eager_ms", median_of(doc, "eager")},
            {"compile_ms", median_of(doc, "compile")},
            {"speedup_vs_eager", correct ? doc.value("speedup_vs_eager", json()) : json()},
            {"speedup_vs_compile", correct ? doc.value("speedup_vs_compile", json()) : json()},
            {"sol_pct", nullptr},
            {"speed_class", correct ? doc.value("speed_class", json()) : json()},
            {"evaluation_id", evaluation_id},
            {"message", ""}};
  if (auto f = loop::sol_fraction(doc); f && correct) o["sol_pct"] = 100.0 * *f;
  // The claim every output makes about its speed (eval/speed_claim.h): intervals and verdict.
  if (correct) add_claim(o, speed_claim(doc).to_json());
  // Library calls the target allows and the candidate kept (a GEMM before its own epilogue).
  if (doc.contains("library_calls") && doc["library_calls"].is_object()) {
    o["library_calls"] = doc["library_calls"].value("operators", json::array());
    o["library_share"] = doc["library_calls"].value("share", json());
  }
  add_stability(o, timing_spread(doc));
  if (doc.contains("env") && doc["env"].is_object()) o["torch"] = doc["env"].value("torch", "");
  o["speedup_by_round"] = json::array({o["speedup_vs_eager"]});
  if (doc.contains("error") && doc["error"].is_object()) {
    o["message"] = first_line(doc["error"].value("message", ""));
  } else {
    // A correct result can still carry warnings (an implausible speedup re-measured, ...).
    std::string warnings;
    for (const auto& c : doc.value("checks", json::array()))
      if (c.value("verdict", "") == "warn")
        warnings += fmt::format("{}warning {}: {}", warnings.empty() ? "" : "; ", c.value("name", ""),
                                first_line(c.value("message", "")));
    o["message"] = warnings;
  }
  // Tries that ran out of memory beside other evaluations before this one ran alone (docs/bench.md#memory).
  const json memory = doc.value("memory", json::object());
  o["memory_retries"] = memory.value("retries", json::array()).size();
  if (o["memory_retries"] > 0) {
    const std::string& m = o["message"].get_ref<const std::string&>();
    o["message"] = (m.empty() ? "" : m + "; ") + "ran out of memory beside other evaluations, evaluated again alone";
  }
  return o;
}

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
  if (correct && best.contains("speed_claim")) add_claim(o, best["speed_claim"]);
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

json missing_candidate_outcome(const std::string& expected_path) {
  return {{"status", "no_candidate"},        {"correct", false},          {"candidate_ms", nullptr},
          {"eager_ms", nullptr},             {"compile_ms", nullptr},     {"speedup_vs_eager", nullptr},
          {"speedup_vs_compile", nullptr},   {"sol_pct", nullptr},        {"speedup_by_round", json::array()},
          {"timing_spread", json::object()}, {"max_iqr_rel", nullptr}, {"unstable", false},
          {"message", fmt::format("no candidate file {}", expected_path)}};
}

}  // namespace kforge::bench
