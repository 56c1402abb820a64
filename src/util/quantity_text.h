// Quantities as the prompts, reports and terminal text write them: one spelling and one precision
// for bytes, FLOP counts and rates, so a figure reads the same wherever it is shown.
#pragma once

#include <string>

namespace kforge {

std::string bytes_text(double bytes);          // "336 MB", "2.15 GB" (decimal units, 3 digits)
std::string flop_text(double flops);           // "137.4 GFLOP" (4 digits)
std::string flop_rate_text(double per_s);      // "145 TFLOP/s", "51.3 TFLOP/s", "820 GFLOP/s" (3 digits)
std::string bandwidth_text(double bytes_per_s);  // "4649 GB/s" (4 digits)

}  // namespace kforge
