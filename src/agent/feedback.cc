#include "agent/feedback.h"

#include <sstream>

#include <fmt/format.h>

namespace kforge::agent {

using json = nlohmann::json;

namespace {

std::string str(const json& obj, const char* key) {
  if (!obj.is_object() || !obj.contains(key)) return {};
  const json& v = obj[key];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

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

std::string mismatch_feedback(const json& doc) {
  const json correctness = doc.value("correctness", json::object());
  const json m = correctness.value("mismatch", json::object());
  const json error = doc.value("error", json::object());
  std::string out = fmt::format("The candidate ran, but its result is wrong: {}\n\n", str(error, "message"));
  if (m.is_object() && !m.empty()) {
    if (m.contains("path")) out += fmt::format("- output: `{}`\n", str(m, "path"));
    if (m.contains("reason")) out += fmt::format("- kind of mismatch: {}\n", str(m, "reason"));
    if (m.contains("max_abs_error")) out += fmt::format("- max abs error: {}\n", number(m["max_abs_error"]));
    if (m.contains("max_rel_error")) out += fmt::format("- max rel error: {}\n", number(m["max_rel_error"]));
    if (m.contains("index")) out += fmt::format("- worst index: {}\n", format_index(m["index"]));
    if (m.contains("shape")) out += fmt::format("- shape: {}\n", format_index(m["shape"]));
    if (m.contains("expected_shape")) out += fmt::format("- expected shape: {}\n", format_index(m["expected_shape"]));
    if (m.contains("expected") && m.contains("got"))
      out += fmt::format("- at that index: expected {}, got {}\n", number(m["expected"]), number(m["got"]));
    if (m.contains("mismatched")) out += fmt::format("- elements outside tolerance: {}\n", number(m["mismatched"]));
    if (m.contains("atol")) out += fmt::format("- tolerance: atol = rtol = {}\n", number(m["atol"]));
    if (m.contains("trial")) out += fmt::format("- trial: {} (fresh random inputs each trial)\n", number(m["trial"]));
    if (m.contains("shape_tag") && str(m, "shape_tag") != "main")
      out += fmt::format("- this was a size variant ({}): do not hard-code sizes\n", str(m, "shape_tag"));
  }
  return out;
}

std::string failed_checks(const json& doc) {
  std::string out;
  for (const auto& c : doc.value("checks", json::array()))
    if (c.is_object() && c.value("verdict", "") == "fail")
      out += fmt::format("- check `{}` failed: {}\n", str(c, "name"), str(c, "message"));
  return out;
}

}  // namespace

std::string format_index(const json& index) {
  if (!index.is_array()) return number(index);
  std::string out = "[";
  for (std::size_t i = 0; i < index.size(); ++i) out += (i ? ", " : "") + number(index[i]);
  return out + "]";
}

std::string functional_feedback(const json& doc) {
  const std::string status = doc.value("status", "");
  const json error = doc.value("error", json::object());
  const std::string message = str(error, "message");
  const std::string log = str(error, "log");
  if (status == "correct") return {};
  if (status == "compile_error") {
    std::string out = fmt::format("The candidate failed to build: {}\n\n", message);
    if (!log.empty()) out += "First compiler errors (verbatim, with file and line):\n\n" + fenced(log);
    return out;
  }
  if (status == "incorrect") {
    if (str(error, "kind") == "mismatch" || doc.value("correctness", json::object()).contains("mismatch"))
      return mismatch_feedback(doc);
    return fmt::format("The candidate's result is wrong: {}\n", message);
  }
  if (status == "rejected") {
    std::string checks = failed_checks(doc);
    std::string out = fmt::format("The candidate was rejected: {}\n", message);
    if (!checks.empty()) out += "\n" + checks;
    return out;
  }
  if (status == "timeout") return fmt::format("The candidate timed out: {}\n", message);
  if (status == "runtime_error") {
    std::string out = fmt::format("The candidate failed at run time ({}): {}\n", str(error, "kind"), message);
    if (!log.empty()) out += "\nEnd of the error output:\n\n" + fenced(tail_lines(log, 25));
    return out;
  }
  std::string out = fmt::format("The evaluation ended with status `{}`: {}\n", status, message);
  std::string checks = failed_checks(doc);
  if (!checks.empty()) out += "\n" + checks;
  return out;
}

std::string one_line_summary(const json& doc) {
  const std::string status = doc.value("status", "");
  const json error = doc.value("error", json::object());
  if (status == "correct") {
    // The evaluator's interleaved estimate, the figure every report shows; the ratio of medians
    // only when there is none.
    const json e = doc.value("speedup", json::object()).value("vs_eager", json());
    if (e.is_object() && e.value("point", json()).is_number())
      return fmt::format("correct, {:.2f}x [{:.2f}, {:.2f}] vs eager", e["point"].get<double>(), e.value("ci_low", 0.0),
                         e.value("ci_high", 0.0));
    const json s = doc.value("speedup_vs_eager", json());
    if (s.is_number()) return fmt::format("correct, {:.2f}x vs eager", s.get<double>());
    return "correct";
  }
  if (status == "compile_error") {
    std::string first = first_error_line(str(error, "log"));
    return "compile_error: " + (first.empty() ? str(error, "message") : first);
  }
  std::string msg = str(error, "message");
  if (msg.size() > 200) msg = msg.substr(0, 200) + "...";
  return status + ": " + msg;
}

}  // namespace kforge::agent
