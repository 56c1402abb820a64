#include "loop/attempt_history.h"

#include <algorithm>

#include <fmt/format.h>

#include "eval/eval_view.h"

namespace kforge::loop {

using json = nlohmann::json;

std::string Ratio::text() const {
  if (low == point && high == point) return fmt::format("{:.2f}x", point);
  return fmt::format("{:.2f}x [{:.2f}, {:.2f}]", point, low, high);
}

json Ratio::to_json() const { return {{"point", point}, {"ci_low", low}, {"ci_high", high}}; }

std::optional<Ratio> speedup_ratio(const json& doc, const std::string& baseline) {
  const EvalView v = EvalView::decode(doc);
  const bool eager = baseline == "eager";
  if (!eager && baseline != "compile") return std::nullopt;
  const auto& s = eager ? v.recorded_speedup_vs_eager : v.recorded_speedup_vs_compile;
  if (s && s->point && *s->point > 0) return Ratio{*s->point, s->ci_low.value_or(*s->point), s->ci_high.value_or(*s->point)};
  const auto& flat = eager ? v.speedup_vs_eager : v.speedup_vs_compile;
  if (flat && *flat > 0) return Ratio{*flat, *flat, *flat};
  return std::nullopt;
}

json AttemptRecord::to_json() const {
  json j = {{"step", step}, {"round", round}, {"verdict", verdict}, {"flags", flags}, {"idea", idea}};
  j["vs_eager"] = vs_eager ? vs_eager->to_json() : json();
  j["vs_compile"] = vs_compile ? vs_compile->to_json() : json();
  j["vs_best"] = vs_best ? vs_best->to_json() : json();
  return j;
}

namespace {

// r<round>.s<sample>.a<attempt> as numbers, so that samples finishing in any order list the same way.
std::vector<int> step_key(const std::string& step) {
  std::vector<int> key;
  int n = -1;
  for (char c : step) {
    if (c >= '0' && c <= '9') {
      n = (n < 0 ? 0 : n * 10) + (c - '0');
    } else if (n >= 0) {
      key.push_back(n);
      n = -1;
    }
  }
  if (n >= 0) key.push_back(n);
  return key;
}

}  // namespace

json history_rows(const std::vector<AttemptRecord>& unordered) {
  std::vector<AttemptRecord> history = unordered;
  std::stable_sort(history.begin(), history.end(),
                   [](const AttemptRecord& x, const AttemptRecord& y) { return step_key(x.step) < step_key(y.step); });
  json rows = json::array();
  for (const auto& a : history) {
    std::string verdict = a.verdict;
    for (const auto& f : a.flags) verdict += ", " + f;
    rows.push_back({{"step", a.step},
                    {"verdict", verdict},
                    {"decision", a.verdict},
                    {"vs_eager", a.vs_eager ? a.vs_eager->text() : "-"},
                    {"vs_compile", a.vs_compile ? a.vs_compile->text() : "-"},
                    {"vs_best", a.vs_best ? a.vs_best->text() : "-"},
                    {"idea", a.idea.empty() ? "-" : a.idea}});
  }
  return rows;
}

json recent_history_rows(const json& rows, std::size_t max_rows, std::size_t& omitted) {
  std::vector<bool> keep(rows.size(), false);
  std::size_t kept = 0;
  for (std::size_t i = 0; i < rows.size() && kept < max_rows; ++i)
    if (rows[i].value("decision", "").rfind("kept", 0) == 0) keep[i] = true, ++kept;
  for (std::size_t i = rows.size(); i-- > 0 && kept < max_rows;)
    if (!keep[i]) keep[i] = true, ++kept;
  json out = json::array();
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (keep[i]) out.push_back(rows[i]);
  omitted = rows.size() - out.size();
  return out;
}

}  // namespace kforge::loop
