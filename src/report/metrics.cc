#include "report/metrics.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace kforge::report {

using json = nlohmann::json;

namespace {

std::optional<double> number(const json& doc, const char* key) {
  if (!doc.is_object() || !doc.contains(key) || !doc[key].is_number()) return std::nullopt;
  return doc[key].get<double>();
}

}  // namespace

const char* baseline_name(Baseline b) {
  switch (b) {
    case Baseline::kEager: return "eager";
    case Baseline::kCompile: return "compile";
    case Baseline::kFaster: return "faster";
  }
  return "";
}

const std::vector<double>& reported_p_values() {
  static const std::vector<double> ps = {0.0, 1.0, 1.5, 2.0};
  return ps;
}

ProblemResult problem_result_from_json(const json& outcome) {
  ProblemResult r;
  r.correct = outcome.value("correct", false);
  r.speedup_vs_eager = number(outcome, "speedup_vs_eager");
  r.speedup_vs_compile = number(outcome, "speedup_vs_compile");
  r.sol_pct = number(outcome, "sol_pct");
  r.unstable = outcome.value("unstable", false);
  if (outcome.contains("speed_class") && outcome["speed_class"].is_string())
    r.speed_class = outcome["speed_class"].get<std::string>();
  return r;
}

bool in_speed_metrics(const ProblemResult& r) { return r.speed_class == "standard"; }

std::optional<double> speedup_against(const ProblemResult& r, Baseline b) {
  switch (b) {
    case Baseline::kEager: return r.speedup_vs_eager;
    case Baseline::kCompile: return r.speedup_vs_compile;
    case Baseline::kFaster:
      if (r.speedup_vs_eager && r.speedup_vs_compile) return std::min(*r.speedup_vs_eager, *r.speedup_vs_compile);
      return r.speedup_vs_eager;
  }
  return std::nullopt;
}

double fast_p(const std::vector<ProblemResult>& results, double p, Baseline b) {
  std::size_t fast = 0, counted = 0;
  for (const auto& r : results) {
    if (!in_speed_metrics(r)) continue;
    ++counted;
    auto s = speedup_against(r, b);
    if (r.correct && s && *s > p) ++fast;
  }
  return counted ? static_cast<double>(fast) / static_cast<double>(counted) : 0.0;
}

std::optional<double> geomean_speedup(const std::vector<ProblemResult>& results, Baseline b, bool correct_only) {
  double log_sum = 0;
  std::size_t n = 0;
  for (const auto& r : results) {
    if (!in_speed_metrics(r)) continue;
    auto s = speedup_against(r, b);
    bool counted = r.correct && s && *s > 0;
    if (correct_only && !counted) continue;
    log_sum += counted ? std::log(*s) : 0.0;  // a failed problem keeps PyTorch: speedup 1.0
    ++n;
  }
  if (n == 0) return std::nullopt;
  return std::exp(log_sum / static_cast<double>(n));
}

namespace {
// Linear interpolation between the closest ranks of sorted values.
double percentile(const std::vector<double>& sorted, double q) {
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}
}  // namespace

std::optional<Quartiles> speedup_quartiles(const std::vector<ProblemResult>& results, Baseline b) {
  std::vector<double> v;
  for (const auto& r : results)
    if (auto s = speedup_against(r, b); r.correct && s && in_speed_metrics(r)) v.push_back(*s);
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return Quartiles{percentile(v, 0.25), percentile(v, 0.5), percentile(v, 0.75)};
}

std::optional<double> median_sol_pct(const std::vector<ProblemResult>& results) {
  std::vector<double> v;
  for (const auto& r : results)
    if (r.correct && r.sol_pct) v.push_back(*r.sol_pct);
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2.0;
}

json compute_metrics(const std::vector<ProblemResult>& results) {
  auto opt = [](const std::optional<double>& v) { return v ? json(*v) : json(); };
  std::size_t correct = std::count_if(results.begin(), results.end(), [](const auto& r) { return r.correct; });
  json m;
  m["problems"] = results.size();
  m["correct"] = correct;
  m["correctness_rate"] = results.empty() ? 0.0 : static_cast<double>(correct) / static_cast<double>(results.size());
  // A baseline counts as measured when at least one correct problem has a speedup against it.
  json measured = json::object();
  json fast = json::object(), geo = json::object(), quartiles = json::object();
  for (Baseline b : {Baseline::kEager, Baseline::kCompile, Baseline::kFaster}) {
    const char* name = baseline_name(b);
    std::size_t with = 0, without = 0;
    for (const auto& r : results)
      if (r.correct) (speedup_against(r, b) ? with : without)++;
    measured[name] = with > 0;
    json per_p = json::object();
    for (double p : reported_p_values()) per_p[fmt::format("{:g}", p)] = fast_p(results, p, b);
    fast[name] = per_p;
    geo[name] = {{"all_problems", opt(geomean_speedup(results, b, false))},
                 {"correct_only", opt(geomean_speedup(results, b, true))},
                 {"correct_without_measurement", without}};
    auto q = speedup_quartiles(results, b);
    quartiles[name] = q ? json{{"p25", q->p25}, {"median", q->median}, {"p75", q->p75}} : json();
  }
  m["baselines_measured"] = measured;
  m["fast_p"] = fast;
  m["geomean_speedup"] = geo;
  m["speedup_quartiles"] = quartiles;
  m["unstable"] = std::count_if(results.begin(), results.end(), [](const auto& r) { return r.correct && r.unstable; });
  m["median_sol_pct"] = opt(median_sol_pct(results));
  json separate = {{"algebraically_cheaper", 0}, {"degenerate", 0}};
  for (const auto& r : results)
    if (!in_speed_metrics(r)) separate[r.speed_class] = separate.value(r.speed_class, 0) + 1;
  m["separate_speed_classes"] = separate;
  return m;
}

}  // namespace kforge::report
