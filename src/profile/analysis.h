// From raw profiles to a verdict a reader (or the performance agent) can act on: is the code
// memory- or compute-bound, how close to the hardware's limit it runs, and the top three things
// that hold it back, each with its number. Works from the profile document `kforge profile` builds
// (docs/profiling.md); Nsight Compute figures are used where present, else kforge's own
// speed-of-light model and torch.profiler.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::profile {

// Achieved throughput of one call of `median_ms` against the measured peaks of `sol`
// (EvalResult `sol`): bytes/s, FLOP/s, each as % of the peak, and % of speed of light.
nlohmann::json achieved(double median_ms, const nlohmann::json& sol);

// {bound, basis ("ncu" or "model"), pct_of_peak, limiters: [{what, text}]} for one side
// ("candidate" or "reference") of a profile document; at most three limiters, most important first.
nlohmann::json analyze(const nlohmann::json& side, const nlohmann::json& sol);

// The compact text for the performance agent's prompt and for the terminal.
std::string render_text(const nlohmann::json& doc);

}  // namespace kforge::profile
