#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/eval_run.h"

namespace kforge {

// The share of one candidate call's time that the library calls the target allowed took, between 0
// and 1, from the candidate worker's `op_times` reply ({"seconds": s, "ops": {computation: s}});
// nullopt where the reply has no positive call time.
std::optional<double> library_share(const nlohmann::json& op_times, const std::vector<std::string>& operators);

// "matmul, conv (62% of the candidate's time)"; empty where there are no operators.
std::string describe_library_calls(const std::vector<std::string>& operators, std::optional<double> share);
// The same from JSON: a list of operator names, and the share (a number, or null where not measured).
std::string describe_library_calls(const nlohmann::json& operators, const nlohmann::json& share);

// For a timed candidate that kept library calls (library_calls.operators), measures their share of its
// time in its own process (library_calls.share: a report, never a verdict). A failure is a note.
void measure_library_share(EvalRun& run);

}  // namespace kforge
