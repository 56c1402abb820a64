// A bench's report document, rebuilt from the store, so `kforge bench` at its end and
// `kforge report bench-N` at any later time (even for a bench that was killed) agree:
//   bench    settings, status, wall time, environment (the summary's provenance of the last
//            session, util/provenance.h, with the torch versions the problems were evaluated with)
//   metrics  src/report/metrics.h over the finished problems, plus done (how many finished),
//            llm (calls, tokens, cost, per solved problem; llm mode) and wall_seconds
//   problems every problem of the suite in order, with its outcome (src/bench/outcome.h) or,
//            when unfinished, status "pending"
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace kforge::bench {

nlohmann::json build_bench_report(const Store& store, std::int64_t bench_id);

// The lines `kforge bench` prints at its end: correctness, then per baseline (the faster of the
// two first) the geometric-mean speedup with the spread of the per-problem speedups and fast_1,
// and a warning when some timings are unstable.
std::string terminal_summary(const nlohmann::json& doc);

// The LLM usage figures of the metrics from the problems' outcomes.
nlohmann::json llm_metrics(const nlohmann::json& problems);

}  // namespace kforge::bench
