// A bench's report document, rebuilt from the store, so `kforge bench` at its end and
// `kforge report bench-N` at any later time (even for a bench that was killed) agree:
//   bench    settings, status, wall time
//   metrics  src/report/metrics.h over the finished problems, plus done (how many finished),
//            llm (calls, tokens, cost, per solved problem; llm mode) and wall_seconds
//   problems every problem of the suite in order, with its outcome (src/bench/outcome.h) or,
//            when unfinished, status "pending"
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace kforge::bench {

nlohmann::json build_bench_report(const Store& store, std::int64_t bench_id);

// The LLM usage figures of the metrics from the problems' outcomes.
nlohmann::json llm_metrics(const nlohmann::json& problems);

}  // namespace kforge::bench
