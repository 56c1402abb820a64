#include "eval/eval_result.h"

#include <fmt/format.h>

#include "eval/eval_view.h"

namespace kforge {

int EvalResult::exit_code() const {
  const std::string s = status();
  if (s == status::kCorrect || s == status::kCompiled) return 0;
  if (s == status::kProblemError) return 2;
  if (s == status::kEnvironmentError) return 4;
  return 1;
}

namespace {
std::string ms(const std::optional<TimingStats>& stats) {
  if (!stats) return "n/a";
  return fmt::format("{:.4g} ms (IQR {:.1f}%, {} reps)", stats->median_ms, 100.0 * stats->iqr_rel(), stats->reps);
}
}  // namespace

std::string summarize(const EvalResult& r) {
  const EvalView v = EvalView::decode(r.doc);
  std::string out = fmt::format("status: {}   target: {}   device: {}\n", r.status(), v.target, v.device);
  if (v.error) {
    out += fmt::format("error: {}\n", v.error->message);
    const std::string& log = v.error->log;
    if (!log.empty()) out += log + (log.back() == '\n' ? "" : "\n");
    if (!v.error->log_path.empty()) out += fmt::format("full log: {}\n", v.error->log_path);
  }
  const CorrectnessView& c = v.correctness;
  if (c.ran) {
    out += fmt::format("correctness: {}/{} trials passed, max abs error {:.3g}, max rel error {:.3g}", c.trials_passed,
                       c.trials, c.max_abs_error, c.max_rel_error);
    if (c.shapes_checked) out += fmt::format(", {} shape(s) checked", *c.shapes_checked);
    out += "\n";
  }
  if (c.mismatch) out += fmt::format("mismatch: {}\n", *c.mismatch);
  for (const CheckEntry& check : v.checks)
    if (check.verdict != "pass") out += fmt::format("check {}: {} — {}\n", check.name, check.verdict, check.message);
  if (v.timing) {
    const TimingView& t = *v.timing;
    out += fmt::format("candidate: {}\n", ms(t.candidate));
    if (t.eager) out += fmt::format("eager:     {}\n", ms(t.eager));
    if (t.compile) out += fmt::format("compile:   {}\n", ms(t.compile));
    if (t.compile_error) out += fmt::format("compile baseline unavailable: {}\n", t.compile_error->substr(0, 200));
    if (v.speedup_vs_eager) out += fmt::format("speedup vs eager: {:.2f}x", *v.speedup_vs_eager);
    if (v.speedup_vs_compile) out += fmt::format("   speedup vs torch.compile: {:.2f}x", *v.speedup_vs_compile);
    out += fmt::format("   ({} threads, precision {})\n", t.threads, v.precision);
  }
  for (const std::string& note : v.notes) out += fmt::format("note: {}\n", note);
  out += fmt::format("evaluated in {:.1f} s", v.wall_seconds);
  return out;
}

}  // namespace kforge
