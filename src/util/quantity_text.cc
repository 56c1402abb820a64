#include "util/quantity_text.h"

#include <fmt/format.h>

namespace kforge {

std::string bytes_text(double b) {
  if (b >= 1e9) return fmt::format("{:.3g} GB", b / 1e9);
  if (b >= 1e6) return fmt::format("{:.3g} MB", b / 1e6);
  if (b >= 1e3) return fmt::format("{:.3g} kB", b / 1e3);
  return fmt::format("{:.0f} B", b);
}

std::string flop_text(double flops) {
  if (flops >= 1e12) return fmt::format("{:.4g} TFLOP", flops / 1e12);
  if (flops >= 1e9) return fmt::format("{:.4g} GFLOP", flops / 1e9);
  if (flops >= 1e6) return fmt::format("{:.4g} MFLOP", flops / 1e6);
  return fmt::format("{:.0f} FLOP", flops);
}

std::string flop_rate_text(double per_s) {
  return per_s >= 1e12 ? fmt::format("{:.3g} TFLOP/s", per_s / 1e12) : fmt::format("{:.3g} GFLOP/s", per_s / 1e9);
}

std::string bandwidth_text(double bytes_per_s) { return fmt::format("{:.4g} GB/s", bytes_per_s / 1e9); }

}  // namespace kforge
