// A roofline chart of a profile document as a standalone SVG (docs/profiling.md): the measured
// memory and compute roofs, the candidate and the reference as points, and, where Nsight Compute
// ran, bars of each unit's throughput as % of peak. For people and for models that read images.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::profile {

std::string roofline_svg(const nlohmann::json& doc);

}  // namespace kforge::profile
