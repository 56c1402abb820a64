// The arithmetic that decides a speed-of-light bound's compute side (the worker's sol.py document),
// as one FLOP count against one rate: what a roofline places a point by, and what "% of the
// arithmetic peak" is a share of.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

namespace kforge::eval {

struct SolArithmetic {
  double flops = 0;             // per call
  double peak_flops_per_s = 0;  // the roof these FLOPs run against
  // FLOPs of the elementwise work expressed at the FMA units' rate (pointwise_ms x the vector rate):
  // a softmax's exps are transcendentals, not FLOPs, but they take that long on the units that
  // bound them, so a kernel at this roof runs at the bound's compute time.
  bool elementwise = false;
};

// The elementwise work where it decides the compute time (compute_by "pointwise", or
// "gemm+pointwise" where a CPU's GEMM shares the FMA units with it), else the matmul and
// convolution FLOPs at their route's peak; none when neither is counted (a copy).
std::optional<SolArithmetic> sol_arithmetic(const nlohmann::json& sol);

}  // namespace kforge::eval
