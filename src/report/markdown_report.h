// A bench report (the document built by src/bench/bench_report.h) as Markdown.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::report {

std::string markdown_report(const nlohmann::json& doc);

}  // namespace kforge::report
