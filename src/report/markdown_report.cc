#include "report/markdown_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "eval/library_share.h"
#include "eval/timing_stats.h"
#include "report/cells.h"
#include "report/metrics.h"
#include "util/clean_text.h"

namespace kforge::report {

using json = nlohmann::json;

namespace {

std::string num(const json& v, const char* spec = "{:.4g}") {
  return v.is_number() ? fmt::format(fmt::runtime(spec), v.get<double>()) : "-";
}

// Table cells must not break the Markdown table, and text a candidate wrote (its error message)
// must make no HTML, image or link of its own (util/clean_text.h).
std::string cell(std::string s) {
  s = terminal_text(s);
  return markdown_text(s.size() > 120 ? s.substr(0, 117) + "..." : s);
}

}  // namespace

std::string markdown_report(const json& doc) {
  const json& b = doc.at("bench");
  const json& m = doc.at("metrics");
  std::string out;
  out += fmt::format("# kforge bench {}: {}\n\n", b.value("id", 0), b.value("suite", ""));
  out += fmt::format("- mode: {}{}\n", b.value("mode", ""),
                     b.value("mode", "") == "candidates" ? fmt::format(" (from {})", b.value("candidates_dir", "")) : "");
  if (b.value("mode", "") == "llm") out += fmt::format("- model: {}\n", b.value("llm", ""));
  out += fmt::format("- target: {} on {}\n", b.value("target", ""), b.value("devices", json::array()).dump());
  out += fmt::format("- precision policy: {}\n", b.value("precision", ""));
  out += fmt::format("- status: {} ({} of {} problems done)\n", b.value("status", ""), m.value("done", 0),
                     m.value("problems_in_suite", 0));
  out += fmt::format("- wall time: {} s\n", num(b.value("wall_seconds", json()), "{:.1f}"));
  out += fmt::format("- environment: {}\n", format_environment(b.value("environment", json())));
  if (b.contains("environment") && b["environment"].contains("command_line"))
    out += fmt::format("- command: {}\n", markdown_code_span(fmt::format("{}", fmt::join(b["environment"]["command_line"].get<std::vector<std::string>>(), " "))));
  out += "\n";

  out += "## Results\n\n";
  out += fmt::format("Correct: {} of {} problems ({}).\n\n", m.value("correct", 0), m.value("problems", 0),
                     format_percent(m.value("correctness_rate", json())));
  if (auto w = unstable_warning(m); !w.empty()) out += "**Warning: " + w + "**\n\n";
  out += "| metric |";
  for (const auto& c : baseline_columns()) out += fmt::format(" {} |", c.title);
  out += "\n|---|---|---|---|\n";
  auto measured = [&](const char* b) { return m["baselines_measured"].value(b, false); };
  for (const char* which : {"all_problems", "correct_only"}) {
    out += std::string(which) == "all_problems" ? "| geomean speedup, all problems (failed = 1.0) |"
                                                : "| geomean speedup, correct problems only |";
    for (const auto& c : baseline_columns())
      out += fmt::format(" {} |", measured(c.key) ? format_speedup(m["geomean_speedup"][c.key][which]) : "not measured");
    out += "\n";
  }
  out += "| spread of the per-problem speedups (correct problems) |";
  for (const auto& c : baseline_columns())
    out += fmt::format(" {} |", measured(c.key) ? format_quartiles(m["speedup_quartiles"][c.key]) : "not measured");
  out += "\n";
  for (double p : reported_p_values()) {
    std::string key = fmt::format("{:g}", p);
    out += fmt::format("| fast_{} (correct and > {}x faster, share of all problems) |", key, key);
    for (const auto& c : baseline_columns())
      out += fmt::format(" {} |", measured(c.key) ? format_percent(m["fast_p"][c.key][key]) : "not measured");
    out += "\n";
  }
  out += fmt::format("\nMedian speed-of-light: {}.\n",
                     m["median_sol_pct"].is_number()
                         ? fmt::format("{:.3g}% (correct problems with a SOL figure)", m["median_sol_pct"].get<double>())
                         : std::string("no SOL figures"));
  if (const json sep = m.value("separate_speed_classes", json::object());
      sep.value("algebraically_cheaper", 0) + sep.value("degenerate", 0) > 0)
    out += fmt::format("Kept out of fast_p and the geomeans (docs/checks.md, speed classes): {} algebraically cheaper, "
                       "{} degenerate.\n", sep.value("algebraically_cheaper", 0), sep.value("degenerate", 0));
  if (m.contains("llm")) {
    const json& l = m["llm"];
    out += fmt::format("LLM: {} calls, {} input + {} output tokens, {} USD; per solved problem: {} tokens, {} USD.\n",
                       l.value("calls", 0), l.value("input_tokens", 0), l.value("output_tokens", 0),
                       num(l.value("cost_usd", json()), "{:.4f}"), num(l.value("tokens_per_solved", json()), "{:.0f}"),
                       num(l.value("cost_usd_per_solved", json()), "{:.4f}"));
  }

  out += "\n## Problems\n\n";
  out += "| problem | status | vs faster baseline | vs eager | vs compile | candidate ms | eager ms | compile ms | "
         "timing spread | % of SOL | wall s | library calls | note |\n"
         "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : doc.at("problems")) {
    const std::string library =
        describe_library_calls(p.value("library_calls", json::array()), p.value("library_share", json()));
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(p.value("name", "")),
                       cell(p.value("status", "")), format_problem_speedup(p, "faster"),
                       format_problem_speedup(p, "eager"), format_problem_speedup(p, "compile"),
                       format_time_with_spread(p, "candidate"),
                       format_time_with_spread(p, "eager"), format_time_with_spread(p, "compile"), format_stability(p),
                       num(p.value("sol_pct", json()), "{:.3g}"), num(p.value("wall_seconds", json()), "{:.1f}"), cell(library.empty() ? "-" : library),
                       cell(p.value("message", "")));
  }
  out += fmt::format("\n{} Times in milliseconds, median (25th-75th percentile). Timing spread: the largest "
                     "interquartile range of the problem's timed functions relative to its median; unstable over "
                     "{:.0f}%.\n",
                     speedup_rule_note(), 100 * kUnstableIqrRel);
  return out;
}

}  // namespace kforge::report
