#include "eval/device_state.h"

#include <algorithm>

namespace kforge {

nlohmann::json summarize_device_states(const std::vector<nlohmann::json>& samples) {
  nlohmann::json out = {{"samples", samples.size()}};
  for (const char* key : {"sm_clock_mhz", "mem_clock_mhz"}) {
    std::vector<double> values;
    for (const auto& s : samples)
      if (s.is_object() && s.contains(key) && s[key].is_number()) values.push_back(s[key].get<double>());
    if (values.empty()) continue;
    auto [lo, hi] = std::minmax_element(values.begin(), values.end());
    out[key] = {{"min", *lo}, {"max", *hi}};
  }
  return out;
}

}  // namespace kforge
