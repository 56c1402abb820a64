#include "eval/eval_view.h"

namespace kforge {

using json = nlohmann::json;

namespace {
std::optional<double> number(const json& doc, const char* key) {
  if (doc.contains(key) && doc[key].is_number()) return doc[key].get<double>();
  return std::nullopt;
}
std::optional<std::string> text(const json& doc, const char* key) {
  if (doc.contains(key) && doc[key].is_string()) return doc[key].get<std::string>();
  return std::nullopt;
}
const json& object(const json& doc, const char* key) {
  static const json empty = json::object();
  return doc.contains(key) && doc[key].is_object() ? doc[key] : empty;
}
}  // namespace

std::optional<TimingStats> decode_timing_stats(const json& j) {
  if (!j.is_object() || !j.contains("median_ms")) return std::nullopt;
  TimingStats s;
  s.reps = j.value("reps", 0);
  s.median_ms = j.value("median_ms", 0.0);
  s.mean_ms = j.value("mean_ms", 0.0);
  s.min_ms = j.value("min_ms", 0.0);
  s.max_ms = j.value("max_ms", 0.0);
  s.p25_ms = j.value("p25_ms", 0.0);
  s.p75_ms = j.value("p75_ms", 0.0);
  s.stdev_ms = j.value("stdev_ms", 0.0);
  return s;
}

EvalView EvalView::decode(const json& doc) {
  EvalView v;
  if (!doc.is_object()) return v;
  v.status = doc.value("status", "");
  v.target = doc.value("target", "");
  v.device = doc.value("device", "");
  v.precision = doc.value("precision", "");
  if (const json& e = object(doc, "error"); !e.empty())
    v.error = EvalError{e.value("kind", ""), e.value("message", ""), e.value("log", ""), e.value("log_path", "")};

  const json& c = object(doc, "correctness");
  v.correctness.ran = c.contains("trials_passed");
  v.correctness.trials = c.value("trials", 0);
  v.correctness.trials_passed = c.value("trials_passed", 0);
  v.correctness.max_abs_error = c.value("max_abs_error", 0.0);
  v.correctness.max_rel_error = c.value("max_rel_error", 0.0);
  if (c.contains("shapes_checked") && c["shapes_checked"].is_array())
    v.correctness.shapes_checked = static_cast<int>(c["shapes_checked"].size());
  if (c.contains("mismatch")) v.correctness.mismatch = object(c, "mismatch").value("message", "");

  for (const auto& check : doc.value("checks", json::array()))
    if (check.is_object())
      v.checks.push_back({check.value("name", ""), check.value("verdict", ""), check.value("message", "")});

  const json& t = object(doc, "timing");
  if (auto candidate = decode_timing_stats(object(t, "candidate"))) {
    TimingView timing;
    timing.candidate = candidate;
    timing.eager = decode_timing_stats(object(t, "eager"));
    timing.compile = decode_timing_stats(object(t, "compile"));
    timing.compile_error = text(t, "compile_error");
    timing.fresh_inputs_ms = number(t, "fresh_inputs_ms");
    timing.threads = t.value("threads", 0);
    v.timing = timing;
  }
  v.speedup_vs_eager = number(doc, "speedup_vs_eager");
  v.speedup_vs_compile = number(doc, "speedup_vs_compile");
  for (const auto& note : doc.value("notes", json::array()))
    if (note.is_string()) v.notes.push_back(note.get<std::string>());
  for (const auto& op : object(doc, "library_calls").value("operators", json::array()))
    if (op.is_string()) v.library_calls.push_back(op.get<std::string>());
  v.library_share = number(object(doc, "library_calls"), "share");
  v.wall_seconds = doc.value("wall_seconds", 0.0);
  return v;
}

}  // namespace kforge
