#include "eval/eval_result.h"

#include <fmt/format.h>

namespace kforge {

int EvalResult::exit_code() const {
  const std::string s = status();
  if (s == status::kCorrect || s == status::kCompiled) return 0;
  if (s == status::kProblemError) return 2;
  return 1;
}

namespace {
std::string ms(const nlohmann::json& stats) {
  if (!stats.is_object() || !stats.contains("median_ms")) return "n/a";
  return fmt::format("{:.4g} ms (IQR {:.1f}%, {} reps)", stats["median_ms"].get<double>(),
                     100.0 * stats.value("iqr_rel", 0.0), stats.value("reps", 0));
}
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
    if (d.contains("speedup_vs_eager") && !d["speedup_vs_eager"].is_null())
      out += fmt::format("speedup vs eager: {:.2f}x", d["speedup_vs_eager"].get<double>());
    if (d.contains("speedup_vs_compile") && !d["speedup_vs_compile"].is_null())
      out += fmt::format("   speedup vs torch.compile: {:.2f}x", d["speedup_vs_compile"].get<double>());
    out += fmt::format("   ({} threads, precision {})\n", t.value("threads", 0), d.value("precision", ""));
  }
  for (const auto& note : d.value("notes", nlohmann::json::array())) out += fmt::format("note: {}\n", note.get<std::string>());
  out += fmt::format("evaluated in {:.1f} s", d.value("wall_seconds", 0.0));
  return out;
}

}  // namespace kforge
