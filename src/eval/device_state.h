// GPU clocks read by the trusted reference worker after each timing block, summarised for the
// EvalResult: a timing taken while the GPU ran below its usual clocks should be visible as such.
#pragma once

#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

// {"samples": n, "sm_clock_mhz": {"min", "max"}, "mem_clock_mhz": {"min", "max"}}; fields with no
// readings are left out. Samples are objects such as {"sm_clock_mhz": 1980, "mem_clock_mhz": 2619}.
nlohmann::json summarize_device_states(const std::vector<nlohmann::json>& samples);

}  // namespace kforge
