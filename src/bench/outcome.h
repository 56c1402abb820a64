// One problem's result in a bench, the same shape whichever way it was obtained:
//   status, correct, candidate_ms / eager_ms / compile_ms (medians, ms), speedup_vs_eager,
//   speedup_vs_compile (baseline median / candidate median), sol_pct (% of speed-of-light),
//   speedup_by_round (best speedup vs eager after each round; null before the first correct
//   candidate), message (why it failed), llm (calls, tokens, cost_usd; llm mode), and the
//   evaluation_id or run_id it comes from; timing_spread ({candidate, eager, compile}: p25_ms,
//   p75_ms, iqr_rel), max_iqr_rel and unstable (max_iqr_rel > kUnstableIqrRel), and the torch
//   version the evaluation ran with. The metrics (src/report/metrics.h) read this.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace kforge::bench {

// From one EvalResult (candidates mode).
nlohmann::json outcome_from_evaluation(const nlohmann::json& eval_result, std::int64_t evaluation_id);

// From a run's summary (loop::build_summary; llm mode): the run's best candidate.
nlohmann::json outcome_from_run(const nlohmann::json& run_summary);

// A problem with no candidate file to evaluate.
nlohmann::json missing_candidate_outcome(const std::string& expected_path);

}  // namespace kforge::bench
