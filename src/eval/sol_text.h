// The speed-of-light bound (the worker's sol.py document) in words, one spelling for every place that
// states it: the loop's prompts and the profile's analysis.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::eval {

// Whether the bound counts matmul or convolution FLOPs at a rate: only then do a matmul rate and route
// describe it (a softmax has none; its exps are elementwise work, sol_pointwise_text).
bool sol_counts_flops(const nlohmann::json& sol);

// "137.4 GFLOP at 51.3 TFLOP/s; " for a bound with counted matmul FLOPs, else a clause saying there
// are none ("no matmul or convolution FLOPs; "): what precedes the bytes in a bound's description.
std::string sol_flops_clause(const nlohmann::json& sol);

// The bound's elementwise and transcendental work (sol.py's pointwise model), as one sentence
// without its leading capital: counts, time, rates, and whether it decides the bound. Empty when
// none was counted (and for results stored before it was).
std::string sol_pointwise_text(const nlohmann::json& sol);

}  // namespace kforge::eval
