#include "util/clean_text.h"
#include "eval/eval_result.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "eval/eval_view.h"
#include "eval/library_share.h"
#include "eval/memory_ledger.h"
#include "eval/speed_claim.h"
#include "eval/timing_stats.h"

namespace kforge {

int EvalResult::exit_code() const {
  const std::string s = status();
  if (s == status::kCorrect || s == status::kCompiled) return 0;
  if (s == status::kProblemError) return 2;
  if (s == status::kEnvironmentError) return 4;
  return 1;
}

std::string EvalResult::error_message() const {
  const EvalView v = EvalView::decode(doc);
  return v.error ? v.error->message : "";
}

std::optional<double> max_iqr_rel(const EvalView& v) {
  std::optional<double> worst;
  for (const auto* s : {&v.recorded.candidate, &v.recorded.eager, &v.recorded.compile})
    if (*s && (*s)->iqr_rel) worst = std::max(worst.value_or(0.0), *(*s)->iqr_rel);
  return worst;
}
std::optional<double> max_iqr_rel(const nlohmann::json& doc) { return max_iqr_rel(EvalView::decode(doc)); }

nlohmann::json timing_spread(const EvalView& v) {
  nlohmann::json out = nlohmann::json::object();
  const auto optional = [](const std::optional<double>& x) { return x ? nlohmann::json(*x) : nlohmann::json(); };
  for (const auto& [which, s] : {std::pair{"candidate", &v.recorded.candidate}, std::pair{"eager", &v.recorded.eager},
                                 std::pair{"compile", &v.recorded.compile}})
    if (*s && (*s)->p25_ms)
      out[which] = {{"p25_ms", *(*s)->p25_ms}, {"p75_ms", optional((*s)->p75_ms)}, {"iqr_rel", (*s)->iqr_rel.value_or(0.0)}};
  return out;
}
nlohmann::json timing_spread(const nlohmann::json& doc) { return timing_spread(EvalView::decode(doc)); }

namespace {

std::string ms(const std::optional<TimingStats>& stats) {
  if (!stats) return "n/a";
  const double iqr = stats->iqr_rel();
  return fmt::format("{:.4g} ms (p25-p75 {:.4g}-{:.4g} ms, IQR {:.1f}% of the median{}, {} reps)", stats->median_ms,
                     stats->p25_ms, stats->p75_ms, 100.0 * iqr, iqr > kUnstableIqrRel ? ", unstable" : "",
                     stats->reps);
}

// "device memory: 288.0 KiB estimated for 2 processes (budget 921.6 KiB), waited 1.5 s; the candidate ran out
// of memory beside other evaluations, so it was tried again alone".
std::string memory_line(const EvalView& v) {
  if (!v.memory) return "";
  const MemoryView& m = *v.memory;
  std::string out = "device memory: " +
                    (m.estimate_bytes ? fmt::format("{} estimated for {} processes", format_bytes(*m.estimate_bytes),
                                                    m.processes)
                                      : std::string("estimate unknown, so it ran alone"));
  out += fmt::format(" (budget {})", format_bytes(m.budget_bytes));
  if (m.waited_seconds >= 0.05) out += fmt::format(", waited {:.1f} s", m.waited_seconds);
  for (const std::string& status : m.retry_statuses)
    out += fmt::format("; the {} ran out of memory beside other evaluations, so it was tried again alone",
                       status == "problem_error" ? "reference" : "candidate");
  return out + "\n";
}


}  // namespace

std::string summarize(const EvalResult& r) {
  const EvalView v = EvalView::decode(r.doc);
  std::string out = fmt::format("status: {}   target: {}   device: {}\n", r.status(), v.target, v.device);
  if (v.error) {
    // A message of several lines (the candidate's exception text) continues set off like its log.
    std::string message = terminal_text(v.error->message);
    for (std::size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at + 5))
      message.replace(at, 1, "\n  | ");
    out += fmt::format("error: {}\n", message);
    // The candidate's own output, set off from kforge's lines: a line in it that reads like a
    // verdict cannot pass for one.
    std::string line;
    for (std::istringstream log(terminal_text(v.error->log)); std::getline(log, line);) out += "  | " + line + "\n";
    if (!v.error->log_path.empty()) out += fmt::format("full log: {}\n", v.error->log_path);
  }
  const CorrectnessView& c = v.correctness;
  if (c.ran && c.trials > 0) {  // a candidate that failed before any trial has no correctness line
    out += fmt::format("correctness: {}/{} trials passed, max abs error {:.3g}, max rel error {:.3g}", c.trials_passed,
                       c.trials, c.max_abs_error, c.max_rel_error);
    if (c.shapes_checked) out += fmt::format(", {} shape(s) checked", *c.shapes_checked);
    out += "\n";
  }
  if (c.mismatch) out += fmt::format("mismatch: {}\n", c.mismatch->message);
  for (const CheckEntry& check : v.checks)
    if (check.verdict != "pass") out += fmt::format("check {}: {} — {}\n", check.name, check.verdict, check.message);
  if (v.timing) {
    const TimingView& t = *v.timing;
    out += fmt::format("candidate: {}\n", ms(t.candidate));
    if (t.eager) out += fmt::format("eager:     {}\n", ms(t.eager));
    if (t.compile) out += fmt::format("compile:   {}\n", ms(t.compile));
    if (t.compile_error) out += fmt::format("compile baseline unavailable: {}\n", t.compile_error->substr(0, 200));
    // The claim every output makes (eval/speed_claim.h): the faster baseline first, each speedup
    // with its interval, the fraction of speed of light, and what the intervals allow to conclude.
    const SpeedClaim claim = speed_claim(v);
    if (claim.vs_faster) {
      out += fmt::format("speedup: {}\n", claim.figures());
      out += fmt::format("verdict: {}\n", claim.advice());
    }
    out += fmt::format("   ({} threads, precision {})\n", t.threads, v.precision);
    if (auto worst = max_iqr_rel(v); worst && *worst > kUnstableIqrRel)
      out += fmt::format("warning: unstable timing: an IQR of {:.0f}% of the median (over {:.0f}%); the speedups are "
                         "not reliable: rerun on an idle machine, or with more --reps\n",
                         100 * *worst, 100 * kUnstableIqrRel);
  }
  if (const std::string kept = v.library_calls ? describe_library_calls(v.library_calls->operators, v.library_calls->share) : "";
      !kept.empty())
    out += fmt::format("library calls kept (allowed by the target): {}\n", kept);
  for (const std::string& note : v.notes) out += fmt::format("note: {}\n", note);
  out += memory_line(v);
  out += fmt::format("evaluated in {:.1f} s", v.wall_seconds);
  return terminal_text(out);  // errors, logs and messages quote the candidate
}

}  // namespace kforge
