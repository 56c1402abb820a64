#include "bench/outcome.h"

#include <fmt/format.h>

#include "bench/outcome_fields.h"
#include "eval/eval_result.h"
#include "eval/eval_view.h"
#include "eval/speed_claim.h"

namespace kforge::bench {

using json = nlohmann::json;

namespace {

json optional(const std::optional<double>& v) { return v ? json(*v) : json(); }
json optional(const std::optional<std::string>& v) { return v ? json(*v) : json(); }

// A function's median as timing.<which> recorded it, timed candidate or not.
json median_of(const std::optional<RecordedTiming>& timing) { return timing ? optional(timing->median_ms) : json(); }

}  // namespace

json outcome_from_evaluation(const json& doc, std::int64_t evaluation_id) {
  const EvalView v = EvalView::decode(doc);
  const bool correct = v.correct;
  json o = {{"status", v.status},
            {"correct", correct},
            {"candidate_ms", median_of(v.recorded.candidate)},
            {"eager_ms", median_of(v.recorded.eager)},
            {"compile_ms", median_of(v.recorded.compile)},
            {"speedup_vs_eager", correct ? optional(v.speedup_vs_eager) : json()},
            {"speedup_vs_compile", correct ? optional(v.speedup_vs_compile) : json()},
            {"sol_pct", nullptr},
            {"speed_class", correct ? optional(v.speed_class) : json()},
            {"evaluation_id", evaluation_id},
            {"message", ""}};
  if (auto f = sol_fraction_of(v); f && correct) o["sol_pct"] = 100.0 * *f;
  // The claim every output makes about its speed (eval/speed_claim.h): intervals and verdict.
  if (correct) {
    const SpeedClaim claim = speed_claim(v);
    add_claim(o, claim.verdict_name(), claim.vs_eager, claim.vs_compile);
  }
  // Library calls the target allows and the candidate kept (a GEMM before its own epilogue).
  if (v.library_calls) {
    o["library_calls"] = v.library_calls->operators;
    o["library_share"] = optional(v.library_calls->share);
  }
  add_stability(o, timing_spread(v));
  if (v.torch) o["torch"] = *v.torch;
  o["speedup_by_round"] = json::array({o["speedup_vs_eager"]});
  if (v.error) {
    o["message"] = first_line(v.error->message);
  } else {
    // A correct result can still carry warnings (an implausible speedup re-measured, ...).
    std::string warnings;
    for (const CheckEntry& c : v.checks)
      if (c.verdict == "warn")
        warnings += fmt::format("{}warning {}: {}", warnings.empty() ? "" : "; ", c.name, first_line(c.message));
    o["message"] = warnings;
  }
  // Tries that ran out of memory beside other evaluations before this one ran alone (docs/bench.md#memory).
  o["memory_retries"] = v.memory ? v.memory->retry_statuses.size() : 0;
  if (o["memory_retries"] > 0) {
    const std::string& m = o["message"].get_ref<const std::string&>();
    o["message"] = (m.empty() ? "" : m + "; ") + "ran out of memory beside other evaluations, evaluated again alone";
  }
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
