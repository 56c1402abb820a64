#include "eval/sol_text.h"

#include <fmt/format.h>

#include "util/quantity_text.h"

namespace kforge::eval {

using nlohmann::json;

bool sol_counts_flops(const json& sol) {
  return sol.value("flops", 0.0) > 0 && sol.value("peak_flops_per_s", json()).is_number();
}

std::string sol_flops_clause(const json& sol) {
  if (!sol_counts_flops(sol)) return "no matmul or convolution FLOPs; ";
  return fmt::format("{} at {}; ", flop_text(sol["flops"].get<double>()),
                     flop_rate_text(sol["peak_flops_per_s"].get<double>()));
}

std::string sol_pointwise_text(const json& sol) {
  const double flops = sol.value("pointwise_flops", 0.0), evaluations = sol.value("transcendentals", 0.0);
  const json p = sol.value("pointwise", json::object());
  if ((flops <= 0 && evaluations <= 0) || !p.is_object() || !p.value("vector_flops_per_s", json()).is_number()) return "";
  std::string functions;
  const json by_function = p.value("by_function", json::object());
  for (const auto& [name, n] : by_function.items())
    if (n.is_number()) functions += fmt::format("{}{:.3g} {}", functions.empty() ? "" : ", ", n.get<double>(), name);
  std::string out = "elementwise work: " + flop_text(flops);
  if (evaluations > 0) out += fmt::format(" and {:.3g} transcendentals ({})", evaluations, functions);
  out += fmt::format(" take {:.3g} ms at {} on the FMA units", sol.value("pointwise_ms", 0.0),
                     flop_rate_text(p["vector_flops_per_s"].get<double>()));
  if (evaluations > 0 && p.value("sfu_ops_per_s", json()).is_number())
    out += fmt::format(" and {:.3g} ops/s on the special function units ({:.0f}% of the transcendentals there)",
                       p["sfu_ops_per_s"].get<double>(), 100 * p.value("sfu_share", 0.0));
  else if (evaluations > 0)
    out += " (transcendentals as FMA polynomials)";
  const std::string by = sol.value("compute_by", "");
  if (sol.value("bound", "") == "compute" && by == "pointwise")
    out += "; this decides the compute bound";
  else if (sol.value("bound", "") == "compute" && by == "gemm+pointwise")
    out += ", the matmul FLOPs included (they share the FMA units); this decides the compute bound";
  return out;
}

}  // namespace kforge::eval
