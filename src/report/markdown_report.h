// A bench report (the document built by src/bench/bench_report.h) as Markdown.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::report {

std::string markdown_report(const nlohmann::json& doc);

// "1.23x", "-" when absent; shared by the renderers.
std::string format_speedup(const nlohmann::json& v);
std::string format_percent(const nlohmann::json& fraction);  // 0.75 -> "75%"

}  // namespace kforge::report
