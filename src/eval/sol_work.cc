#include "eval/sol_work.h"

namespace kforge::eval {

using nlohmann::json;

namespace {

double number(const json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0.0;
}

}  // namespace

std::optional<SolArithmetic> sol_arithmetic(const json& sol) {
  if (!sol.is_object()) return std::nullopt;
  const std::string by = sol.value("compute_by", "");
  const double pointwise_ms = number(sol, "pointwise_ms");
  const double vector = number(sol.value("pointwise", json::object()), "vector_flops_per_s");
  if ((by == "pointwise" || by == "gemm+pointwise") && pointwise_ms > 0 && vector > 0)
    return SolArithmetic{pointwise_ms / 1e3 * vector, vector, true};
  if (number(sol, "flops") > 0 && number(sol, "peak_flops_per_s") > 0)
    return SolArithmetic{number(sol, "flops"), number(sol, "peak_flops_per_s"), false};
  return std::nullopt;
}

}  // namespace kforge::eval
