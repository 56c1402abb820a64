#include "loop/speed_compare.h"

#include <fmt/format.h>

#include "eval/eval_view.h"
#include "eval/speed_claim.h"

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
  // The evaluator's intervals over interleaved rounds, read by the one rule every output uses
  // (eval/speed_claim.h), win when present.
  const SpeedClaim claim = speed_claim(doc);
  if (claim.vs_faster && claim.vs_faster->rounds > 0) {
    SpeedVerdict v;
    v.faster = claim.faster();
    v.ratio = claim.vs_faster->point;
    v.reason = claim.verdict_name() + ": " + claim.figures();
    return v;
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
  const EvalView v = EvalView::decode(doc);
  const auto median = [](const std::optional<RecordedTiming>& t) { return t ? t->median_ms : std::nullopt; };
  auto c = median(v.recorded.candidate), e = median(v.recorded.eager), k = median(v.recorded.compile);
  if (!c || *c <= 0 || (!e && !k)) return std::nullopt;
  double base = e && k ? std::min(*e, *k) : e ? *e : *k;
  return base / *c;
}

std::optional<double> sol_fraction(const json& doc) { return sol_fraction_of(doc); }

std::optional<double> candidate_median_ms(const json& doc) {
  const auto& c = EvalView::decode(doc).recorded.candidate;
  return c ? c->median_ms : std::nullopt;
}

}  // namespace kforge::loop
