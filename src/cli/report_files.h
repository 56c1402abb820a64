// Writing a bench's reports (report.md, report.json, report.html) and finding the Chart.js
// source that the HTML report inlines.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge {

// The Chart.js UMD build: $KFORGE_CHARTJS, else Debian's libjs-chart.js. Throws InputError
// naming the package when neither is there.
std::string load_chart_js();

// Writes the three reports into `out_dir`; returns the paths written. Without Chart.js the HTML
// report is skipped with a warning.
std::vector<std::string> write_bench_reports(const nlohmann::json& doc, const std::filesystem::path& out_dir);

}  // namespace kforge
