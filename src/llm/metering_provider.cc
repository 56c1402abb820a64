// MeteringProvider (see metering_provider.h).
#include "llm/metering_provider.h"

#include <spdlog/spdlog.h>

namespace kforge::llm {

MeteringProvider::MeteringProvider(std::unique_ptr<Provider> inner, PriceTable prices,
                                   std::shared_ptr<UsageMeter> meter)
    : inner_(std::move(inner)), prices_(std::move(prices)), meter_(std::move(meter)) {}

Response MeteringProvider::complete(const Request& request) {
  Response response = inner_->complete(request);
  // A replayed reply keeps the provider that produced it, and so its price.
  const std::string& spec = response.provider.empty() ? inner_->name() : response.provider;
  if (auto price = prices_.find(spec)) response.cost_usd = cost_usd(response.usage, *price);
  if (meter_) meter_->record(response);
  spdlog::debug("llm {}: {} in / {} out tokens, {} ms, {} attempt(s)", spec, response.usage.input_tokens,
                response.usage.output_tokens, response.latency.count(), response.attempts);
  return response;
}

void MeteringProvider::answered_from_store(const Request& request, const Response& response) {
  inner_->answered_from_store(request, response);
}

}  // namespace kforge::llm
