#include "report/markdown_report.h"

#include <fmt/format.h>

#include "report/metrics.h"

namespace kforge::report {

using json = nlohmann::json;

std::string format_speedup(const json& v) { return v.is_number() ? fmt::format("{:.2f}x", v.get<double>()) : "-"; }
std::string format_percent(const json& f) { return f.is_number() ? fmt::format("{:.0f}%", 100 * f.get<double>()) : "-"; }

namespace {

std::string num(const json& v, const char* spec = "{:.4g}") {
  return v.is_number() ? fmt::format(fmt::runtime(spec), v.get<double>()) : "-";
}

// Table cells must not break the Markdown table.
std::string cell(std::string s) {
  for (auto& c : s)
    if (c == '|' || c == '\n') c = ' ';
  return s.size() > 120 ? s.substr(0, 117) + "..." : s;
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
  out += fmt::format("- wall time: {} s\n\n", num(b.value("wall_seconds", json()), "{:.1f}"));

  out += "## Results\n\n";
  out += fmt::format("Correct: {} of {} problems ({}).\n\n", m.value("correct", 0), m.value("problems", 0),
                     format_percent(m.value("correctness_rate", json())));
  out += "| metric | vs eager | vs torch.compile | vs faster of the two |\n|---|---|---|---|\n";
  auto measured = [&](const char* b) { return m["baselines_measured"].value(b, false); };
  for (double p : reported_p_values()) {
    std::string key = fmt::format("{:g}", p);
    out += fmt::format("| fast_{} (correct and > {}x faster, share of all problems) |", key, key);
    for (const char* base : {"eager", "compile", "faster"})
      out += fmt::format(" {} |", measured(base) ? format_percent(m["fast_p"][base][key]) : "not measured");
    out += "\n";
  }
  for (const char* which : {"all_problems", "correct_only"}) {
    out += std::string(which) == "all_problems" ? "| geomean speedup, all problems (failed = 1.0) |"
                                                : "| geomean speedup, correct problems only |";
    for (const char* base : {"eager", "compile", "faster"})
      out += fmt::format(" {} |", measured(base) ? format_speedup(m["geomean_speedup"][base][which]) : "not measured");
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
  out += "| problem | status | candidate ms | eager ms | compile ms | vs eager | vs compile | % of SOL | wall s | note |\n"
         "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& p : doc.at("problems")) {
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", cell(p.value("name", "")),
                       p.value("status", ""), num(p.value("candidate_ms", json())), num(p.value("eager_ms", json())),
                       num(p.value("compile_ms", json())), format_speedup(p.value("speedup_vs_eager", json())),
                       format_speedup(p.value("speedup_vs_compile", json())), num(p.value("sol_pct", json()), "{:.3g}"),
                       num(p.value("wall_seconds", json()), "{:.1f}"), cell(p.value("message", "")));
  }
  out += "\nSpeedups are baseline median time / candidate median time from interleaved measurements; "
         "times in milliseconds.\n";
  return out;
}

}  // namespace kforge::report
