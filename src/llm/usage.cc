// Price table, cost and usage meter (see usage.h).
#include "llm/usage.h"

#include <fmt/format.h>

namespace kforge::llm {

void PriceTable::set(std::string spec, Price price) { prices_[std::move(spec)] = price; }

std::optional<Price> PriceTable::find(std::string_view spec) const {
  if (auto it = prices_.find(spec); it != prices_.end()) return it->second;
  if (auto colon = spec.find(':'); colon != std::string_view::npos) {
    if (auto it = prices_.find(spec.substr(colon + 1)); it != prices_.end()) return it->second;
  }
  return std::nullopt;
}

double cost_usd(const Usage& usage, const Price& price) {
  return (static_cast<double>(usage.input_tokens) * price.input_per_mtok +
          static_cast<double>(usage.output_tokens) * price.output_per_mtok) /
         1e6;
}

void UsageMeter::record(const Response& response) {
  std::lock_guard lock(mutex_);
  totals_.calls += 1;
  totals_.usage += response.usage;
  totals_.latency += response.latency;
  if (response.cost_usd)
    totals_.cost_usd += *response.cost_usd;
  else
    totals_.unpriced_calls += 1;
}

UsageTotals UsageMeter::totals() const {
  std::lock_guard lock(mutex_);
  return totals_;
}

std::string format_totals(const UsageTotals& t) {
  std::string cost = t.unpriced_calls == t.calls ? std::string("cost unknown (no [llm.prices] entry)")
                     : t.unpriced_calls > 0
                         ? fmt::format("${:.4f} (+{} unpriced call{})", t.cost_usd, t.unpriced_calls,
                                       t.unpriced_calls == 1 ? "" : "s")
                         : fmt::format("${:.4f}", t.cost_usd);
  return fmt::format("{} call{}, {} input + {} output tokens, {:.2f} s total latency, {}", t.calls,
                     t.calls == 1 ? "" : "s", t.usage.input_tokens, t.usage.output_tokens,
                     t.latency.count() / 1000.0, cost);
}

}  // namespace kforge::llm
