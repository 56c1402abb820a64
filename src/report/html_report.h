// A bench report as one self-contained HTML file: the tables rendered here, the charts drawn in
// the page by Chart.js, whose source is inlined (no network needed to open the file).
//
// Charts: the fast_p curve over p (one series per measured baseline, a point per correct problem
// and one for fast_0), per-problem speedups sorted (bars by outcome, a cross per failed problem, the
// 1x line), best speedup over rounds (one series per problem; `kforge bench --llm` only), and % of
// speed-of-light. Speedup axes are logarithmic. After drawing, each chart's <figure> carries
// data-points-per-series (what Chart.js actually laid out, a JSON list) so tests can check it, and
// <body> data-charts-drawn the number of charts drawn.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace kforge::report {

std::string html_report(const nlohmann::json& doc, const std::string& chart_js_source);

}  // namespace kforge::report
