// Correctness: trials on the main shape and on size variants, each checked by the reference (its
// outputs, the runtime checks and the precision audit), and the list of checks that never fired.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_run.h"

namespace kforge {

// Asks the reference to draw trial `trial`'s inputs (and keep its outputs).
PendingRequest send_make_trial(EvalRun& run, const std::string& tag, int trial, bool main_shape);

// Runs `trials` trials of shape `tag`, pipelined between the two workers. `first_draw`: trial 0,
// already asked of the reference. False once the candidate fails (the status says how).
bool run_trials(EvalRun& run, const std::string& tag, int trials, bool main_shape,
                std::optional<PendingRequest> first_draw = std::nullopt);

// The size variants (overrides of the problem's globals), a few trials each.
void check_shape_variants(EvalRun& run, const nlohmann::json& variants);

// Lists every runtime check that ran and never fired as passed, so the result shows what was looked at.
void finish_checks(EvalRun& run);

}  // namespace kforge
