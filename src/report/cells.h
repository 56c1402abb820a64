// Table cells and lines the bench report renderers (Markdown, HTML) and the terminal summary
// share, so a figure reads the same everywhere: every time with its spread, every speedup led by
// the faster baseline, every unstable timing marked.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::report {

// "1.23x", "-" when absent.
std::string format_speedup(const nlohmann::json& v);
// A problem's speedup with its 95% interval, "1.15x [1.02, 1.30]" (the point alone where it has no
// interval), for `which` in eager, compile, faster (the faster baseline); "-" when absent.
std::string format_problem_speedup(const nlohmann::json& problem, const std::string& which);
// The footnote every bench report prints under its table: the rule its figures follow.
std::string speedup_rule_note();
// 0.75 -> "75%", "-" when absent.
std::string format_percent(const nlohmann::json& fraction);

// A problem's median time with its interquartile range, "0.512 (0.498-0.540)" (ms), for
// `which` in candidate, eager, compile; "-" when not timed.
std::string format_time_with_spread(const nlohmann::json& problem, const char* which);

// A problem's timing stability: "unstable, IQR 23%" past the threshold, "IQR 4%" below it, "-"
// when nothing was timed.
std::string format_stability(const nlohmann::json& problem);

// The per-problem spread behind a geometric mean: "p25-p75 0.95-1.40x", "-" when absent.
std::string format_quartiles(const nlohmann::json& quartiles);

// The baselines in the order every table shows them: the faster of the two first.
struct BaselineColumn {
  const char* key;    // metrics key: faster, eager, compile
  const char* title;  // column title
};
const std::vector<BaselineColumn>& baseline_columns();

// A problem's speedup against the faster baseline (the smaller of the two), as JSON (null when
// the problem has none).
nlohmann::json speedup_vs_faster(const nlohmann::json& problem);

// The warning for a bench with unstable timings (a sentence; each renderer labels it), "" when
// there are none.
std::string unstable_warning(const nlohmann::json& metrics);

// "kforge 0.1.0, torch 2.11.0, Python 3.13.5; AMD EPYC 7B13 (2 CPUs), no NVIDIA GPU; Linux 6.1"
// from an `environment` block (util/provenance.h plus torch and python_version).
std::string format_environment(const nlohmann::json& env);

}  // namespace kforge::report
