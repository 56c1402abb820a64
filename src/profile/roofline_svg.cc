#include "profile/roofline_svg.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "eval/sol_work.h"
#include "util/markup.h"

namespace kforge::profile {

using json = nlohmann::json;

namespace {

constexpr double kWidth = 1080, kPlotLeft = 80, kPlotTop = 40, kPlotWidth = 520, kPlotHeight = 300;
constexpr double kBarsTop = kPlotTop + kPlotHeight + 70, kBarsHeight = 150;

double num(const json& j, const char* key) { return j.contains(key) && j[key].is_number() ? j[key].get<double>() : 0; }

// Log-scaled axis from lo to hi (both > 0) onto [from, to] pixels.
struct LogAxis {
  double lo, hi, from, to;
  double operator()(double v) const {
    v = std::clamp(v, lo, hi);
    return from + (to - from) * (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
  }
};

std::string si(double v, const char* unit) {
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (std::fabs(v) >= 1000 && p < 5) {
    v /= 1000;
    ++p;
  }
  return fmt::format("{:.3g} {}{}", v, prefixes[p], unit);
}

struct Point {
  std::string label, color;
  double intensity, flops_per_s;
  bool placed_by_bandwidth;
};

}  // namespace

std::string roofline_svg(const json& doc) {
  const json sol = doc.value("sol", json::object());
  // The compute roof and the FLOPs placing the points are those that bound the compute side: for a
  // softmax, its elementwise work against the FMA units' rate (eval/sol_work.h).
  const auto work = eval::sol_arithmetic(sol);
  const bool elementwise = work && work->elementwise;
  const double peak = work ? work->peak_flops_per_s : num(sol, "peak_flops_per_s");
  const double bandwidth = num(sol, "bandwidth_bytes_per_s");
  const double flops = work ? work->flops : 0.0, bytes = num(sol, "bytes");
  const json sides = doc.value("sides", json::object());
  const bool bars = sides.contains("candidate") && sides["candidate"].contains("ncu") &&
                    !sides["candidate"]["ncu"].value("kernels", json::array()).empty();
  const double height = bars ? kBarsTop + kBarsHeight + 40 : kPlotTop + kPlotHeight + 70;
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
      kWidth, height);
  svg += fmt::format("<text x=\"{}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Roofline: {} on {} ({})</text>\n",
                     kPlotLeft, escape_markup(doc.value("problem_name", "")), escape_markup(doc.value("target", "")),
                     escape_markup(doc.value("device_name", doc.value("device", ""))));
  if (peak <= 0 || bandwidth <= 0) {
    svg += fmt::format("<text x=\"{}\" y=\"{}\">No measured peaks: no speed-of-light figures in this profile.</text>\n",
                       kPlotLeft, kPlotTop + 40);
    return svg + "</svg>\n";
  }
  const double ridge = peak / bandwidth;
  std::vector<Point> points;
  for (const auto& [key, label, color] : {std::tuple{"candidate", "candidate", "#d62728"},
                                          std::tuple{"reference", "reference (eager)", "#1f77b4"}}) {
    if (!sides.contains(key)) continue;
    const json ach = sides[key].value("achieved", json::object());
    if (num(ach, "median_ms") <= 0 || bytes <= 0) continue;
    if (flops > 0)
      points.push_back({label, color, flops / bytes, flops / (num(ach, "median_ms") / 1e3), false});
    else  // no FLOPs counted: the point's height under the memory roof is its share of the bandwidth
      points.push_back({label, color, 0, num(ach, "bytes_per_s"), true});
  }
  double x_lo = std::pow(10, std::floor(std::log10(std::min(ridge, flops > 0 ? flops / bytes : ridge) / 8)));
  double x_hi = std::pow(10, std::ceil(std::log10(std::max(ridge, flops > 0 ? flops / bytes : ridge) * 8)));
  for (auto& p : points)
    if (p.placed_by_bandwidth) {
      p.intensity = x_lo;
      p.flops_per_s *= x_lo;
    }
  double y_lo = x_lo * bandwidth / 10, y_hi = peak * 3;
  for (const auto& p : points)
    if (p.flops_per_s > 0) y_lo = std::min(y_lo, p.flops_per_s / 3);
  y_lo = std::pow(10, std::floor(std::log10(y_lo)));
  y_hi = std::pow(10, std::ceil(std::log10(y_hi)));
  const LogAxis x{x_lo, x_hi, kPlotLeft, kPlotLeft + kPlotWidth};
  const LogAxis y{y_lo, y_hi, kPlotTop + kPlotHeight, kPlotTop};

  svg += fmt::format("<g id=\"roofline\">\n<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#444\"/>\n",
                     kPlotLeft, kPlotTop, kPlotWidth, kPlotHeight);
  for (double v = x_lo; v <= x_hi * 1.0001; v *= 10)
    svg += fmt::format("<line x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\" stroke=\"#ddd\"/><text x=\"{0:.1f}\" "
                       "y=\"{3}\" text-anchor=\"middle\">{4:g}</text>\n", x(v), kPlotTop, kPlotTop + kPlotHeight,
                       kPlotTop + kPlotHeight + 16, v);
  for (double v = y_lo; v <= y_hi * 1.0001; v *= 10)
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\" stroke=\"#ddd\"/><text x=\"{3}\" "
                       "y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n", kPlotLeft, y(v), kPlotLeft + kPlotWidth,
                       kPlotLeft - 6, y(v) + 4, si(v, "FLOP/s"));
  svg += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">arithmetic intensity ({}FLOP/byte, minimum "
                     "traffic)</text>\n", kPlotLeft + kPlotWidth / 2, kPlotTop + kPlotHeight + 34,
                     elementwise ? "elementwise work as FMA-unit " : "");
  // The roofs: bandwidth up to the ridge, then the arithmetic peak.
  svg += fmt::format("<polyline id=\"roof\" fill=\"none\" stroke=\"#222\" stroke-width=\"2\" points=\"{:.1f},{:.1f} "
                     "{:.1f},{:.1f} {:.1f},{:.1f}\"/>\n", x(x_lo), y(x_lo * bandwidth), x(ridge), y(peak), x(x_hi), y(peak));
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\">memory roof {} (measured)</text>\n",
                     x(x_lo) + 6, y(x_lo * bandwidth) - 8, si(bandwidth, "B/s"));
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"end\">{} {} {} "
                     "(measured)</text>\n", x(x_hi) - 6, y(peak) - 6,
                     elementwise ? "FMA-unit roof (elementwise work)" : "compute roof", si(peak, "FLOP/s"),
                     escape_markup(sol.value("dtype", "")));
  double legend_y = kPlotTop + 10;
  for (const auto& p : points) {
    if (p.flops_per_s <= 0) continue;
    svg += fmt::format("<circle class=\"point\" data-side=\"{}\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"{}\"/>\n",
                       escape_markup(p.label), x(p.intensity), y(p.flops_per_s), p.color);
    const double roof = std::min(peak, p.intensity * bandwidth);
    const std::string value = p.placed_by_bandwidth ? si(p.flops_per_s / x_lo, "B/s") : si(p.flops_per_s, "FLOP/s");
    const std::string detail = p.placed_by_bandwidth
                                   ? fmt::format("{:.0f}% of the memory roof (no FLOPs counted: placed by bandwidth)",
                                                 100 * p.flops_per_s / roof)
                                   : fmt::format("{:.0f}% of the roof at {:.3g} FLOP/byte", 100 * p.flops_per_s / roof,
                                                 p.intensity);
    svg += fmt::format("<circle cx=\"{}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/><text x=\"{}\" y=\"{:.1f}\" "
                       "font-size=\"12\">{}: {}</text>\n", kPlotLeft + kPlotWidth + 14, legend_y, p.color,
                       kPlotLeft + kPlotWidth + 24, legend_y + 4, escape_markup(p.label), escape_markup(value));
    svg += fmt::format("<text x=\"{}\" y=\"{:.1f}\" font-size=\"11\" fill=\"#555\">{}</text>\n",
                       kPlotLeft + kPlotWidth + 24, legend_y + 20, escape_markup(detail));
    legend_y += 44;
  }
  svg += "</g>\n";

  if (bars) {
    // Each unit's throughput as % of its peak in the main kernel of each side (Nsight Compute).
    svg += fmt::format("<g id=\"units\">\n<text x=\"{}\" y=\"{}\" font-weight=\"bold\">Main kernel, % of peak "
                       "(Nsight Compute)</text>\n", kPlotLeft, kBarsTop - 12);
    svg += fmt::format("<rect x=\"{0}\" y=\"{1}\" width=\"10\" height=\"10\" fill=\"#d62728\"/><text x=\"{2}\" "
                       "y=\"{3}\">candidate</text><rect x=\"{4}\" y=\"{1}\" width=\"10\" height=\"10\" "
                       "fill=\"#1f77b4\"/><text x=\"{5}\" y=\"{3}\">reference</text>\n",
                       kPlotLeft + kPlotWidth + 14, kBarsTop, kPlotLeft + kPlotWidth + 28, kBarsTop + 9,
                       kPlotLeft + kPlotWidth + 104, kPlotLeft + kPlotWidth + 118);
    const std::pair<const char*, const char*> units[] = {
        {"dram_pct", "DRAM"}, {"l2_pct", "L2"}, {"l1_pct", "L1/shared"}, {"sm_pct", "SM"}, {"achieved_occupancy_pct", "occupancy"}};
    const double group_w = kPlotWidth / 5, bar_w = 22;
    svg += fmt::format("<line x1=\"{0}\" y1=\"{1}\" x2=\"{2}\" y2=\"{1}\" stroke=\"#444\"/>\n", kPlotLeft,
                       kBarsTop + kBarsHeight, kPlotLeft + kPlotWidth);
    int u = 0;
    for (const auto& [key, label] : units) {
      const double gx = kPlotLeft + u++ * group_w + 10;
      int s = 0;
      for (const auto& [side, color] : {std::pair{"candidate", "#d62728"}, std::pair{"reference", "#1f77b4"}}) {
        const double bx = gx + s++ * (bar_w + 4);
        if (!sides.contains(side) || !sides[side].contains("ncu")) continue;
        const json kernels = sides[side]["ncu"].value("kernels", json::array());
        if (kernels.empty() || !kernels[0].contains(key) || !kernels[0][key].is_number()) continue;
        const double pct = kernels[0][key].get<double>();
        const double h = kBarsHeight * std::clamp(pct, 0.0, 100.0) / 100;
        svg += fmt::format("<rect class=\"bar\" data-side=\"{}\" data-unit=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" "
                           "width=\"{}\" height=\"{:.1f}\" fill=\"{}\"/><text x=\"{:.1f}\" y=\"{:.1f}\" "
                           "font-size=\"10\" text-anchor=\"middle\">{:.0f}</text>\n",
                           side, label, bx, kBarsTop + kBarsHeight - h, bar_w, h, color, bx + bar_w / 2,
                           kBarsTop + kBarsHeight - h - 3, pct);
      }
      svg += fmt::format("<text x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n", gx + bar_w + 2,
                         kBarsTop + kBarsHeight + 16, label);
    }
    svg += "</g>\n";
  }
  return svg + "</svg>\n";
}

}  // namespace kforge::profile
