#include "eval/verdict.h"

#include <algorithm>
#include <limits>

namespace kforge {

using json = nlohmann::json;

namespace {
int rank(const std::string& verdict) { return verdict == "fail" ? 2 : verdict == "warn" ? 1 : 0; }
}  // namespace

void merge_check(json& checks, const json& finding) {
  if (!checks.is_array()) checks = json::array();
  const std::string name = finding.value("name", "");
  const json entry = {{"name", name}, {"verdict", finding.value("verdict", "fail")},
                      {"message", finding.value("message", "")}};
  for (auto& c : checks) {
    if (c.value("name", "") != name) continue;
    if (rank(entry["verdict"]) > rank(c.value("verdict", "pass"))) c = entry;
    return;
  }
  checks.push_back(entry);
}

std::optional<json> first_failure(const json& findings) {
  if (!findings.is_array()) return std::nullopt;
  for (const auto& f : findings)
    if (f.value("verdict", "") == "fail") return f;
  return std::nullopt;
}

SolCall judge_sol(double sol_ms, double candidate_ms, double eager_ms, double slack) {
  if (!(sol_ms > 0) || !(candidate_ms > 0)) return SolCall::kUnknown;
  if (eager_ms > 0 && eager_ms * slack < sol_ms) return SolCall::kModelUnreliable;
  return candidate_ms * slack < sol_ms ? SolCall::kBeyond : SolCall::kWithin;
}

bool beyond_physical_bound(double hard_ms, double measured_ms, double slack) {
  return hard_ms > 0 && measured_ms > 0 && measured_ms * slack < hard_ms;
}

double lower_quartile(std::vector<double> ms) {
  if (ms.empty()) return 0;
  const auto k = (ms.size() - 1) / 4;
  std::nth_element(ms.begin(), ms.begin() + static_cast<std::ptrdiff_t>(k), ms.end());
  return ms[k];
}

bool far_slower(const std::vector<double>& fresh_ms, double typical_ms) {
  if (fresh_ms.empty() || !(typical_ms > 0)) return false;
  const double fresh = *std::min_element(fresh_ms.begin(), fresh_ms.end());
  return fresh > kCachedResultsRatio * typical_ms && fresh - typical_ms > kColdCallMs;
}

double percent_of_sol(double sol_ms, double measured_ms) {
  return measured_ms > 0 ? 100.0 * sol_ms / measured_ms : std::numeric_limits<double>::infinity();
}

}  // namespace kforge
