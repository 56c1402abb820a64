// The facts every request of a run states, from one source: the library-call policy as the verdict
// applies it (the target's [checks] allowed_torch_calls, emptied by --kernels-only), the tolerance
// and precision policy with what the float64 audit accepts, the device as kforge measured it, and
// the eager and torch.compile times with their spread and the speed-of-light bound (the run's
// baseline step, measured before round 0). prompts/facts.mustache renders them; generate.system and
// analyze.system include it, so generation, fix and analysis requests all carry the same text.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"

namespace kforge::loop {

// Runs `python -m kforge_worker baseline` for the problem of `base` (its device, threads, reps,
// precision and compile baseline), under the device's timing lock. The measurements, or
// {"error": why} when they could not be taken (the prompts then say so).
nlohmann::json measure_baseline(const EvalOptions& base, const std::filesystem::path& scratch);

// The context keys `rules`, `device` and `baseline` (docs/loop.md) from the options the verdict
// uses and a baseline document (measure_baseline's).
nlohmann::json request_facts(const EvalOptions& base, const nlohmann::json& baseline);

}  // namespace kforge::loop
