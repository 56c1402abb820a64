// Token and cost accounting: the price table from [llm.prices] in kforge.toml, the cost
// of one reply, and a thread-safe meter that sums calls, tokens, latency and cost per run.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "llm/provider.h"

namespace kforge::llm {

// US dollars per million tokens.
struct Price {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
};

class PriceTable {
 public:
  void set(std::string spec, Price price);
  // Exact provider spec ("openai:gpt-4o") first, then the model alone ("gpt-4o").
  std::optional<Price> find(std::string_view spec) const;
  bool empty() const { return prices_.empty(); }

 private:
  std::map<std::string, Price, std::less<>> prices_;
};

double cost_usd(const Usage& usage, const Price& price);

struct UsageTotals {
  std::int64_t calls = 0;
  Usage usage;
  std::chrono::milliseconds latency{0};  // summed over calls
  double cost_usd = 0;                   // over the priced calls
  std::int64_t unpriced_calls = 0;       // calls whose provider has no price
};

class UsageMeter {
 public:
  void record(const Response& response);
  UsageTotals totals() const;

 private:
  mutable std::mutex mutex_;
  UsageTotals totals_;
};

// "1,234 in / 567 out tokens, 2.35 s, $0.0123" style summary of a run.
std::string format_totals(const UsageTotals& totals);

}  // namespace kforge::llm
