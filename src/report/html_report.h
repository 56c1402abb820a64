// A bench report as one self-contained HTML file: the tables rendered here, the charts drawn in
// the page by Chart.js, whose source is inlined (no network needed to open the file).
//
// Charts, each with one data point per problem in every series: the fast_p curve over p (one
// series per measured baseline), per-problem speedups sorted, best speedup over iterations (one
// series per problem), and % of speed-of-light. After drawing, each chart's <figure> carries
// data-points-per-series (what Chart.js actually laid out, a JSON list) so tests can check it.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::report {

std::string html_report(const nlohmann::json& doc, const std::string& chart_js_source);

}  // namespace kforge::report
