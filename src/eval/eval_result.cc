#include "eval/eval_result.h"

#include <algorithm>

#include <fmt/format.h>

#include "eval/timing_stats.h"
#include "util/provenance.h"

namespace kforge {

int EvalResult::exit_code() const {
  const std::string s = status();
  if (s == status::kCorrect || s == status::kCompiled) return 0;
  if (s == status::kProblemError) return 2;
  return 1;
}

void add_provenance(nlohmann::json& doc) {
  nlohmann::json& env = doc["env"];
  env.update(provenance());
  if (env.contains("python") && env["python"].is_string())
    env["python_version"] = python_version(env["python"].get<std::string>());
}

std::optional<double> max_iqr_rel(const nlohmann::json& doc) {
  const auto t = doc.value("timing", nlohmann::json::object());
  std::optional<double> worst;
  for (const char* which : {"candidate", "eager", "compile"})
    if (t.contains(which) && t[which].is_object() && t[which].contains("iqr_rel"))
      worst = std::max(worst.value_or(0.0), t[which]["iqr_rel"].get<double>());
  return worst;
}

nlohmann::json timing_spread(const nlohmann::json& doc) {
  const auto t = doc.value("timing", nlohmann::json::object());
  nlohmann::json out = nlohmann::json::object();
  for (const char* which : {"candidate", "eager", "compile"})
    if (t.contains(which) && t[which].is_object() && t[which].contains("p25_ms"))
      out[which] = {{"p25_ms", t[which]["p25_ms"]}, {"p75_ms", t[which]["p75_ms"]}, {"iqr_rel", t[which].value("iqr_rel", 0.0)}};
  return out;
}

namespace {

std::string ms(const nlohmann::json& stats) {
  if (!stats.is_object() || !stats.contains("median_ms")) return "n/a";
  const double iqr = stats.value("iqr_rel", 0.0);
  return fmt::format("{:.4g} ms (p25-p75 {:.4g}-{:.4g} ms, IQR {:.1f}% of the median{}, {} reps)",
                     stats["median_ms"].get<double>(), stats.value("p25_ms", 0.0), stats.value("p75_ms", 0.0),
                     100.0 * iqr, iqr > kUnstableIqrRel ? ", unstable" : "", stats.value("reps", 0));
}

// "1.23x" or "-".
std::string times(const nlohmann::json& v) { return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : "-"; }

}  // namespace

std::string summarize(const EvalResult& r) {
  const auto& d = r.doc;
  std::string out = fmt::format("status: {}   target: {}   device: {}\n", r.status(), d.value("target", ""),
                                d.value("device", ""));
  if (d.contains("error") && d["error"].is_object()) {
    out += fmt::format("error: {}\n", d["error"].value("message", ""));
    std::string log = d["error"].value("log", "");
    if (!log.empty()) out += log + (log.back() == '\n' ? "" : "\n");
    if (d["error"].contains("log_path")) out += fmt::format("full log: {}\n", d["error"]["log_path"].get<std::string>());
  }
  const auto& c = d.value("correctness", nlohmann::json::object());
  if (c.contains("trials_passed")) {
    out += fmt::format("correctness: {}/{} trials passed, max abs error {:.3g}, max rel error {:.3g}",
                       c.value("trials_passed", 0), c.value("trials", 0), c.value("max_abs_error", 0.0),
                       c.value("max_rel_error", 0.0));
    if (c.contains("shapes_checked")) out += fmt::format(", {} shape(s) checked", c["shapes_checked"].size());
    out += "\n";
  }
  if (c.contains("mismatch")) out += fmt::format("mismatch: {}\n", c["mismatch"].value("message", ""));
  for (const auto& check : d.value("checks", nlohmann::json::array()))
    if (check.value("verdict", "") != "pass")
      out += fmt::format("check {}: {} — {}\n", check.value("name", ""), check.value("verdict", ""),
                         check.value("message", ""));
  const auto& t = d.value("timing", nlohmann::json::object());
  if (t.contains("candidate")) {
    out += fmt::format("candidate: {}\n", ms(t["candidate"]));
    if (t.contains("eager")) out += fmt::format("eager:     {}\n", ms(t["eager"]));
    if (t.contains("compile")) out += fmt::format("compile:   {}\n", ms(t["compile"]));
    if (t.contains("compile_error")) out += fmt::format("compile baseline unavailable: {}\n", t["compile_error"].get<std::string>().substr(0, 200));
    // The faster of the two baselines leads: beating eager alone is not beating PyTorch.
    const auto vs_eager = d.value("speedup_vs_eager", nlohmann::json());
    const auto vs_compile = d.value("speedup_vs_compile", nlohmann::json());
    if (vs_eager.is_number() || vs_compile.is_number()) {
      const bool compile_wins =
          vs_compile.is_number() && (!vs_eager.is_number() || vs_compile.get<double>() < vs_eager.get<double>());
      out += fmt::format("speedup vs the faster baseline ({}): {}   vs eager: {}   vs torch.compile: {}",
                         compile_wins ? "torch.compile" : "eager", times(compile_wins ? vs_compile : vs_eager),
                         times(vs_eager), times(vs_compile));
    }
    out += fmt::format("   ({} threads, precision {})\n", t.value("threads", 0), d.value("precision", ""));
    if (auto worst = max_iqr_rel(d); worst && *worst > kUnstableIqrRel)
      out += fmt::format("warning: unstable timing: an IQR of {:.0f}% of the median (over {:.0f}%); the speedups are "
                         "not reliable: rerun on an idle machine, or with more --reps\n",
                         100 * *worst, 100 * kUnstableIqrRel);
  }
  for (const auto& note : d.value("notes", nlohmann::json::array())) out += fmt::format("note: {}\n", note.get<std::string>());
  out += fmt::format("evaluated in {:.1f} s", d.value("wall_seconds", 0.0));
  return out;
}

}  // namespace kforge
