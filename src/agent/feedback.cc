#include "agent/feedback.h"

#include <sstream>

#include <fmt/format.h>

#include "eval/eval_view.h"

namespace kforge::agent {

using json = nlohmann::json;

namespace {

std::string number(const json& v) {
  if (v.is_number_float()) return fmt::format("{:.6g}", v.get<double>());
  if (v.is_number()) return v.dump();
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// At most `max_lines` of the end of a log (tracebacks end with the error that matters).
std::string tail_lines(const std::string& log, std::size_t max_lines) {
  std::vector<std::string> lines;
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::size_t from = lines.size() > max_lines ? lines.size() - max_lines : 0;
  std::string out;
  for (std::size_t i = from; i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

std::string fenced(const std::string& text) {
  std::string body = text;
  while (!body.empty() && body.back() == '\n') body.pop_back();
  return "```text\n" + body + "\n```\n";
}

std::string first_error_line(const std::string& log) {
  std::istringstream in(log);
  for (std::string l; std::getline(in, l);)
    if (l.find("error") != std::string::npos) return l;
  return {};
}

std::string mismatch_feedback(const EvalView& v) {
  const std::string message = v.error ? v.error->message : "";
  std::string out = fmt::format("The candidate ran, but its result is wrong: {}\n\n", message);
  if (!v.correctness.mismatch) return out;
  const MismatchView& m = *v.correctness.mismatch;
  if (!m.path.empty()) out += fmt::format("- output: `{}`\n", m.path);
  if (!m.reason.empty()) out += fmt::format("- kind of mismatch: {}\n", m.reason);
  if (!m.max_abs_error.is_null()) out += fmt::format("- max abs error: {}\n", number(m.max_abs_error));
  if (!m.max_rel_error.is_null()) out += fmt::format("- max rel error: {}\n", number(m.max_rel_error));
  if (!m.index.is_null()) out += fmt::format("- worst index: {}\n", format_index(m.index));
  if (!m.shape.is_null()) out += fmt::format("- shape: {}\n", format_index(m.shape));
  if (!m.expected_shape.is_null()) out += fmt::format("- expected shape: {}\n", format_index(m.expected_shape));
  if (!m.expected.is_null() && !m.got.is_null())
    out += fmt::format("- at that index: expected {}, got {}\n", number(m.expected), number(m.got));
  if (!m.mismatched.is_null()) out += fmt::format("- elements outside tolerance: {}\n", number(m.mismatched));
  if (!m.atol.is_null()) out += fmt::format("- tolerance: atol = rtol = {}\n", number(m.atol));
  if (!m.trial.is_null()) out += fmt::format("- trial: {} (fresh random inputs each trial)\n", number(m.trial));
  if (!m.shape_tag.empty() && m.shape_tag != "main")
    out += fmt::format("- this was a size variant ({}): do not hard-code sizes\n", m.shape_tag);
  return out;
}

std::string failed_checks(const EvalView& v) {
  std::string out;
  for (const CheckEntry& c : v.checks)
    if (c.verdict == "fail") out += fmt::format("- check `{}` failed: {}\n", c.name, c.message);
  return out;
}

// For an evaluation that stopped before its checks decided (a build, a trial or a time limit): a
// static rule rejects only once the program has run, so a fix of the crash alone would come back
// rejected by it.
std::string also_failed(const EvalView& v) {
  const std::string checks = failed_checks(v);
  return checks.empty() ? "" : "\nOnce it runs, it is also rejected by these checks:\n" + checks;
}

}  // namespace

std::string format_index(const json& index) {
  if (!index.is_array()) return number(index);
  std::string out = "[";
  for (std::size_t i = 0; i < index.size(); ++i) out += (i ? ", " : "") + number(index[i]);
  return out + "]";
}

std::string functional_feedback(const json& doc) {
  const EvalView v = EvalView::decode(doc);
  const EvalError error = v.error.value_or(EvalError{});
  const std::string& message = error.message;
  const std::string& log = error.log;
  const std::string& status = v.status;
  if (status == "correct") return {};
  if (status == "compile_error") {
    std::string out = fmt::format("The candidate failed to build: {}\n\n", message);
    if (!log.empty()) out += "First compiler errors (verbatim, with file and line):\n\n" + fenced(log);
    return out + also_failed(v);
  }
  if (status == "incorrect") {
    if (error.kind == "mismatch" || v.correctness.mismatch) return mismatch_feedback(v) + also_failed(v);
    return fmt::format("The candidate's result is wrong: {}\n", message) + also_failed(v);
  }
  if (status == "rejected") {
    std::string checks = failed_checks(v);
    std::string out = fmt::format("The candidate was rejected: {}\n", message);
    if (!checks.empty()) out += "\n" + checks;
    return out;
  }
  if (status == "timeout") return fmt::format("The candidate timed out: {}\n", message) + also_failed(v);
  if (status == "runtime_error") {
    std::string out = fmt::format("The candidate failed at run time ({}): {}\n", error.kind, message);
    if (!log.empty()) out += "\nEnd of the error output:\n\n" + fenced(tail_lines(log, 25));
    return out + also_failed(v);
  }
  std::string out = fmt::format("The evaluation ended with status `{}`: {}\n", status, message);
  std::string checks = failed_checks(v);
  if (!checks.empty()) out += "\n" + checks;
  return out;
}

std::string one_line_summary(const json& doc) {
  const EvalView v = EvalView::decode(doc);
  const EvalError error = v.error.value_or(EvalError{});
  if (v.status == "correct") {
    // The evaluator's interleaved estimate, the figure every report shows; the ratio of medians
    // only when there is none.
    if (const auto& e = v.recorded_speedup_vs_eager; e && e->point)
      return fmt::format("correct, {:.2f}x [{:.2f}, {:.2f}] vs eager", *e->point, e->ci_low.value_or(0.0),
                         e->ci_high.value_or(0.0));
    if (v.speedup_vs_eager) return fmt::format("correct, {:.2f}x vs eager", *v.speedup_vs_eager);
    return "correct";
  }
  if (v.status == "compile_error") {
    std::string first = first_error_line(error.log);
    return "compile_error: " + (first.empty() ? error.message : first);
  }
  std::string msg = error.message;
  if (msg.size() > 200) msg = msg.substr(0, 200) + "...";
  return v.status + ": " + msg;
}

}  // namespace kforge::agent
