#include "report/cells.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "eval/timing_stats.h"

namespace kforge::report {

using json = nlohmann::json;

std::string format_speedup(const json& v) { return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : "-"; }

std::string format_problem_speedup(const json& p, const std::string& which) {
  std::string base = which;
  if (which == "faster") {
    const json e = p.value("speedup_vs_eager", json()), c = p.value("speedup_vs_compile", json());
    base = c.is_number() && (!e.is_number() || c.get<double>() < e.get<double>()) ? "compile" : "eager";
  }
  const json point = p.value("speedup_vs_" + base, json());
  if (!point.is_number()) return "-";
  const json ci = p.value("speedup_vs_" + base + "_ci", json());
  if (!ci.is_array() || ci.size() != 2) return format_speedup(point);
  return fmt::format("{:.2f}x [{:.2f}, {:.2f}]", point.get<double>(), ci[0].get<double>(), ci[1].get<double>());
}

std::string speedup_rule_note() {
  return "Speedups: the median over interleaved measurement rounds of baseline time / candidate time, with its 95% "
         "bootstrap confidence interval in brackets (eval/speed_claim.h); a candidate counts as faster than PyTorch "
         "only where the interval against every baseline measured lies above 1, and a problem whose interval "
         "includes 1 is inconclusive (measure it again).";
}

std::string format_percent(const json& f) {
  return f.is_number() ? fmt::format("{:.0f}%", 100 * f.get<double>()) : "-";
}

std::string format_time_with_spread(const json& p, const char* which) {
  const json median = p.value(fmt::format("{}_ms", which), json());
  if (!median.is_number()) return "-";
  std::string out = fmt::format("{:.4g}", median.get<double>());
  const json spread = p.value("timing_spread", json::object());
  if (spread.contains(which) && spread[which].value("p25_ms", json()).is_number())
    out += fmt::format(" ({:.4g}-{:.4g})", spread[which]["p25_ms"].get<double>(), spread[which]["p75_ms"].get<double>());
  return out;
}

std::string format_stability(const json& p) {
  const json worst = p.value("max_iqr_rel", json());
  if (!worst.is_number()) return "-";
  return fmt::format("{}IQR {:.0f}%", p.value("unstable", false) ? "unstable, " : "", 100 * worst.get<double>());
}

std::string format_quartiles(const json& q) {
  if (!q.is_object()) return "-";
  return fmt::format("p25-p75 {:.2f}-{:.2f}x", q.value("p25", 0.0), q.value("p75", 0.0));
}

const std::vector<BaselineColumn>& baseline_columns() {
  static const std::vector<BaselineColumn> columns = {
      {"faster", "vs the faster of eager and torch.compile"}, {"eager", "vs eager"}, {"compile", "vs torch.compile"}};
  return columns;
}

json speedup_vs_faster(const json& p) {
  if (!p.value("correct", false)) return nullptr;
  const json e = p.value("speedup_vs_eager", json()), c = p.value("speedup_vs_compile", json());
  if (e.is_number() && c.is_number()) return std::min(e.get<double>(), c.get<double>());
  return e.is_number() ? e : json();
}

std::string unstable_warning(const json& m) {
  const int unstable = m.value("unstable", 0);
  if (unstable == 0) return "";
  return fmt::format("{} of {} correct problems have an unstable timing (an interquartile range over {:.0f}% of "
                     "the median); their speedups are not reliable. Rerun them on an idle machine or with more "
                     "repetitions.",
                     unstable, m.value("correct", 0), 100 * kUnstableIqrRel);
}

std::string format_environment(const json& env) {
  if (!env.is_object()) return "not recorded";
  const json host = env.value("host", json::object());
  std::string torch = "-";
  if (env.contains("torch") && env["torch"].is_array() && !env["torch"].empty())
    torch = fmt::format("{}", fmt::join(env["torch"].get<std::vector<std::string>>(), ", "));
  const json gpus = host.value("gpus", json::array());
  return fmt::format("kforge {}, torch {}, Python {}; {} ({} CPUs), {}; {}", env.value("kforge_version", "-"), torch,
                     env.value("python_version", "-"), host.value("cpu", "-"), host.value("cpus", 0),
                     gpus.empty() ? std::string("no NVIDIA GPU")
                                  : fmt::format("{}", fmt::join(gpus.get<std::vector<std::string>>(), ", ")),
                     host.value("os", "-"));
}

}  // namespace kforge::report
