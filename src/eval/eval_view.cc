#include "eval/eval_view.h"

#include <fmt/format.h>

namespace kforge {

using json = nlohmann::json;

namespace {

// One object of the document and where it sits ("timing.candidate."), read field by field: absent
// or null is "not there", the wrong type is an EvalResultError naming the field.
class Fields {
 public:
  Fields(const json* obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  bool has(const char* key) const { return listed(key) && !(*obj_)[key].is_null(); }
  bool listed(const char* key) const { return obj_ && obj_->contains(key); }  // null included

  std::optional<double> number(const char* key) const {
    if (!has(key)) return std::nullopt;
    return expect(key, at(key).is_number(), "a number").get<double>();
  }
  std::optional<std::int64_t> integer(const char* key) const {
    if (!has(key)) return std::nullopt;
    return expect(key, at(key).is_number(), "an integer").get<std::int64_t>();
  }
  std::optional<std::string> text(const char* key) const {
    if (!has(key)) return std::nullopt;
    return expect(key, at(key).is_string(), "a string").get<std::string>();
  }
  std::optional<bool> flag(const char* key) const {
    if (!has(key)) return std::nullopt;
    return expect(key, at(key).is_boolean(), "true or false").get<bool>();
  }
  // A scalar (number, string, bool), or a list of them, kept as written; null when absent.
  json scalar_or_list(const char* key) const {
    if (!has(key)) return json();
    const json& v = at(key);
    bool ok = !v.is_object();
    if (v.is_array())
      for (const auto& e : v) ok = ok && !e.is_structured();
    return expect(key, ok, "a scalar or a list of scalars");
  }
  // An object field; reads as an empty object when absent.
  Fields object(const char* key) const {
    if (!has(key)) return Fields(nullptr, path_ + key + ".");
    return Fields(&expect(key, at(key).is_object(), "an object"), path_ + key + ".");
  }
  // An array field; empty when absent.
  const json& array(const char* key) const {
    static const json empty = json::array();
    if (!has(key)) return empty;
    return expect(key, at(key).is_array(), "a list");
  }
  std::vector<std::string> strings(const char* key) const {
    std::vector<std::string> out;
    std::size_t i = 0;
    for (const auto& e : array(key)) {
      if (!e.is_string()) fail(fmt::format("{}[{}]", key, i), e, "a string");
      out.push_back(e.get<std::string>());
      ++i;
    }
    return out;
  }
  // The objects of an array field, each read as Fields.
  std::vector<Fields> objects(const char* key) const {
    std::vector<Fields> out;
    std::size_t i = 0;
    for (const auto& e : array(key)) {
      const std::string where = fmt::format("{}{}[{}]", path_, key, i++);
      if (!e.is_object()) throw EvalResultError(fmt::format("EvalResult field `{}` is {}, expected an object", where, e.type_name()));
      out.emplace_back(&e, where + ".");
    }
    return out;
  }
  bool present() const { return obj_ != nullptr; }
  bool empty() const { return !obj_ || obj_->empty(); }

 private:
  const json& at(const char* key) const { return (*obj_)[key]; }
  const json& expect(const char* key, bool ok, const char* what) const {
    if (!ok) fail(key, at(key), what);
    return at(key);
  }
  [[noreturn]] void fail(const std::string& key, const json& v, const char* what) const {
    throw EvalResultError(fmt::format("EvalResult field `{}{}` is {}, expected {}", path_, key, v.type_name(), what));
  }

  const json* obj_;
  std::string path_;
};

std::optional<TimingStats> timing_stats(const Fields& t) {
  if (!t.has("median_ms")) return std::nullopt;
  TimingStats s;
  s.reps = static_cast<int>(t.integer("reps").value_or(0));
  s.median_ms = t.number("median_ms").value_or(0);
  s.mean_ms = t.number("mean_ms").value_or(0);
  s.min_ms = t.number("min_ms").value_or(0);
  s.max_ms = t.number("max_ms").value_or(0);
  s.p25_ms = t.number("p25_ms").value_or(0);
  s.p75_ms = t.number("p75_ms").value_or(0);
  s.stdev_ms = t.number("stdev_ms").value_or(0);
  return s;
}

std::optional<RecordedSpeedup> recorded_speedup(const Fields& s) {
  if (!s.present()) return std::nullopt;
  return RecordedSpeedup{s.number("point"), s.number("ci_low"), s.number("ci_high"),
                         static_cast<int>(s.integer("rounds").value_or(0))};
}

std::optional<RecordedTiming> recorded_timing(const Fields& t) {
  if (!t.present()) return std::nullopt;
  return RecordedTiming{t.number("median_ms"), t.number("p25_ms"), t.number("p75_ms"), t.number("iqr_rel")};
}

std::optional<EvalError> error_of(const Fields& e) {
  if (e.empty()) return std::nullopt;
  return EvalError{e.text("kind").value_or(""), e.text("message").value_or(""), e.text("log").value_or(""),
                   e.text("log_path").value_or("")};
}

}  // namespace

std::optional<TimingStats> decode_timing_stats(const json& j) {
  if (!j.is_object()) return std::nullopt;
  return timing_stats(Fields(&j, "timing."));
}

std::optional<EvalError> decode_error(const json& error) {
  if (error.is_null()) return std::nullopt;
  const json wrapped = {{"error", error}};  // so that a wrong type is named `error`
  return error_of(Fields(&wrapped, "").object("error"));
}

std::optional<std::string> decode_status(const json& doc) {
  if (!doc.is_object()) return std::nullopt;
  return Fields(&doc, "").text("status");
}

EvalView EvalView::decode(const json& doc) {
  EvalView v;
  if (!doc.is_object()) return v;
  const Fields d(&doc, "");
  v.status = d.text("status").value_or("");
  v.correct = d.flag("correct").value_or(false);
  v.target = d.text("target").value_or("");
  v.device = d.text("device").value_or("");
  v.precision = d.text("precision").value_or("");
  v.problem = d.text("problem").value_or("");
  v.problem_sha256 = d.text("problem_sha256").value_or("");
  v.candidate_sha256 = d.text("candidate_sha256").value_or("");
  v.error = error_of(d.object("error"));

  const Fields c = d.object("correctness");
  v.correctness.ran = c.has("trials_passed");
  v.correctness.trials = static_cast<int>(c.integer("trials").value_or(0));
  v.correctness.trials_passed = static_cast<int>(c.integer("trials_passed").value_or(0));
  v.correctness.max_abs_error = c.number("max_abs_error").value_or(0);
  v.correctness.max_rel_error = c.number("max_rel_error").value_or(0);
  if (c.has("shapes_checked")) v.correctness.shapes_checked = static_cast<int>(c.array("shapes_checked").size());
  if (const Fields m = c.object("mismatch"); m.present()) {
    MismatchView mv;
    mv.message = m.text("message").value_or("");
    mv.path = m.text("path").value_or("");
    mv.reason = m.text("reason").value_or("");
    mv.shape_tag = m.text("shape_tag").value_or("");
    mv.max_abs_error = m.scalar_or_list("max_abs_error");
    mv.max_rel_error = m.scalar_or_list("max_rel_error");
    mv.index = m.scalar_or_list("index");
    mv.shape = m.scalar_or_list("shape");
    mv.expected_shape = m.scalar_or_list("expected_shape");
    mv.expected = m.scalar_or_list("expected");
    mv.got = m.scalar_or_list("got");
    mv.mismatched = m.scalar_or_list("mismatched");
    mv.atol = m.scalar_or_list("atol");
    mv.trial = m.scalar_or_list("trial");
    v.correctness.mismatch = mv;
  }

  for (const Fields& check : d.objects("checks"))
    v.checks.push_back({check.text("name").value_or(""), check.text("verdict").value_or(""),
                        check.text("message").value_or("")});

  const Fields t = d.object("timing");
  if (auto candidate = timing_stats(t.object("candidate"))) {
    TimingView timing;
    timing.candidate = candidate;
    timing.eager = timing_stats(t.object("eager"));
    timing.compile = timing_stats(t.object("compile"));
    timing.compile_error = t.text("compile_error");
    timing.fresh_inputs_ms = t.number("fresh_inputs_ms");
    timing.threads = static_cast<int>(t.integer("threads").value_or(0));
    v.timing = timing;
  }
  v.recorded = {recorded_timing(t.object("candidate")), recorded_timing(t.object("eager")),
                recorded_timing(t.object("compile")), std::nullopt};
  if (auto threads = t.integer("threads")) v.recorded.threads = static_cast<int>(*threads);
  v.speedup_vs_eager = d.number("speedup_vs_eager");
  v.speedup_vs_compile = d.number("speedup_vs_compile");
  const Fields speedup = d.object("speedup");
  v.recorded_speedup_vs_eager = recorded_speedup(speedup.object("vs_eager"));
  v.recorded_speedup_vs_compile = recorded_speedup(speedup.object("vs_compile"));
  v.speed_class = d.text("speed_class");

  if (const Fields sol = d.object("sol"); sol.present()) {
    SolView s;
    for (const char* key : {"fraction", "achieved_fraction", "fraction_of_sol", "efficiency"})
      if (!s.fraction) s.fraction = sol.number(key);
    for (const char* key : {"candidate_pct_of_sol", "percent"})
      if (!s.percent) s.percent = sol.number(key);
    s.sol_ms = sol.number("sol_ms");
    s.bound_ms = sol.number("bound_ms");
    if (!s.bound_ms) s.bound_ms = s.sol_ms;
    s.candidate_pct_of_sol = sol.number("candidate_pct_of_sol");
    s.remeasured = sol.listed("remeasured_pct_of_sol");
    s.remeasured_pct_of_sol = sol.number("remeasured_pct_of_sol");
    s.route = sol.text("route").value_or("");
    for (const Fields& route : sol.objects("routes"))
      s.routes.push_back({route.text("route").value_or(""), route.number("peak_flops_per_s")});
    s.bound = sol.text("bound");
    s.bytes = sol.number("bytes");
    s.bandwidth_bytes_per_s = sol.number("bandwidth_bytes_per_s");
    s.eager_pct_of_sol = sol.number("eager_pct_of_sol");
    s.note = sol.text("note");
    s.as_written = doc["sol"];
    v.sol = s;
  }
  if (const Fields calls = d.object("library_calls"); calls.present())
    v.library_calls = LibraryCallsView{calls.strings("operators"), calls.number("share"), doc["library_calls"]};
  if (const Fields m = d.object("memory"); !m.empty()) {
    MemoryView mem;
    if (auto bytes = m.integer("estimate_bytes")) mem.estimate_bytes = static_cast<std::uint64_t>(*bytes);
    mem.processes = static_cast<int>(m.integer("processes").value_or(2));
    mem.budget_bytes = static_cast<std::uint64_t>(m.integer("budget_bytes").value_or(0));
    mem.waited_seconds = m.number("waited_seconds").value_or(0);
    for (const Fields& retry : m.objects("retries")) mem.retry_statuses.push_back(retry.text("status").value_or(""));
    v.memory = mem;
  }
  if (const Fields env = d.object("env"); env.present()) {
    v.torch = env.text("torch").value_or("");
    v.isolation = env.text("isolation");
  }
  v.notes = d.strings("notes");
  v.wall_seconds = d.number("wall_seconds").value_or(0);
  return v;
}

}  // namespace kforge
