#include "loop/speed_compare.h"

#include <fmt/format.h>

namespace kforge::loop {

using json = nlohmann::json;

namespace {

std::optional<double> num(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key) || !obj[key].is_number()) return std::nullopt;
  return obj[key].get<double>();
}

json timing_of(const json& doc, const char* which) {
  if (!doc.is_object() || !doc.contains("timing") || !doc["timing"].is_object()) return json();
  const json& t = doc["timing"];
  return t.contains(which) && t[which].is_object() ? t[which] : json();
}

}  // namespace

SpeedVerdict faster_timing(const json& a, const json& b, double min_gain) {
  SpeedVerdict v;
  auto am = num(a, "median_ms"), bm = num(b, "median_ms");
  if (!am || !bm || *am <= 0 || *bm <= 0) {
    v.reason = "no timing to compare";
    return v;
  }
  v.ratio = *am / *bm;
  const double a25 = num(a, "p25_ms").value_or(*am), b75 = num(b, "p75_ms").value_or(*bm);
  if (v.ratio < 1 + min_gain) {
    v.reason = fmt::format("{:.3g} ms vs {:.3g} ms: {:.2f}x, below the {:.0f}% needed", *bm, *am, v.ratio, 100 * min_gain);
  } else if (b75 >= a25) {
    v.reason = fmt::format("{:.3g} ms vs {:.3g} ms: {:.2f}x, but within the noise (p75 {:.3g} ms >= p25 {:.3g} ms)", *bm,
                           *am, v.ratio, b75, a25);
  } else {
    v.faster = true;
    v.reason = fmt::format("{:.3g} ms vs {:.3g} ms: {:.2f}x faster, outside the noise", *bm, *am, v.ratio);
  }
  return v;
}

SpeedVerdict beats_pytorch(const json& doc, double min_gain) {
  // The evaluator's own verdicts (confidence intervals over interleaved rounds) win when present.
  if (doc.is_object() && doc.contains("speedup") && doc["speedup"].is_object()) {
    SpeedVerdict v;
    bool any = false;
    v.faster = true;
    for (const char* key : {"vs_eager", "vs_compile"}) {
      const json& s = doc["speedup"].value(key, json());
      if (!s.is_object() || !s.contains("faster") || !s["faster"].is_boolean()) continue;
      any = true;
      v.faster = v.faster && s["faster"].get<bool>();
      double point = s.value("point", 0.0);
      if (v.ratio == 0 || point < v.ratio) v.ratio = point;
      v.reason += fmt::format("{}{}: {:.2f}x, {:.0f}% CI [{:.2f}, {:.2f}]", v.reason.empty() ? "" : "; ",
                              key[3] == 'e' ? "vs eager" : "vs torch.compile", point, 100 * s.value("confidence", 0.95),
                              s.value("ci_low", 0.0), s.value("ci_high", 0.0));
    }
    if (any) return v;
  }
  json eager = timing_of(doc, "eager"), compile = timing_of(doc, "compile");
  json baseline = eager;
  std::string name = "eager";
  if (compile.is_object() && (!eager.is_object() || num(compile, "median_ms") < num(eager, "median_ms"))) {
    baseline = compile;
    name = "torch.compile";
  }
  SpeedVerdict v = faster_timing(baseline, timing_of(doc, "candidate"), min_gain);
  v.reason = fmt::format("vs {}: {}", name, v.reason);
  return v;
}

std::optional<double> speedup_vs_best_baseline(const json& doc) {
  auto c = num(timing_of(doc, "candidate"), "median_ms");
  auto e = num(timing_of(doc, "eager"), "median_ms");
  auto k = num(timing_of(doc, "compile"), "median_ms");
  if (!c || *c <= 0 || (!e && !k)) return std::nullopt;
  double base = e && k ? std::min(*e, *k) : e ? *e : *k;
  return base / *c;
}

std::optional<double> sol_fraction(const json& doc) {
  if (!doc.is_object() || !doc.contains("sol") || !doc["sol"].is_object()) return std::nullopt;
  const json& sol = doc["sol"];
  for (const char* key : {"fraction", "achieved_fraction", "fraction_of_sol", "efficiency"})
    if (auto f = num(sol, key)) return *f;
  for (const char* key : {"candidate_pct_of_sol", "percent"})
    if (auto p = num(sol, key)) return *p / 100.0;
  // Otherwise derive it from the bound and the measured time.
  auto bound = num(sol, "bound_ms");
  if (!bound) bound = num(sol, "sol_ms");
  auto c = candidate_median_ms(doc);
  if (bound && c && *c > 0) return *bound / *c;
  return std::nullopt;
}

std::optional<double> candidate_median_ms(const json& doc) { return num(timing_of(doc, "candidate"), "median_ms"); }

}  // namespace kforge::loop
