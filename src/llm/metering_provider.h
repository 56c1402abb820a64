// Decorator that prices each reply from the [llm.prices] table and adds it to a run's
// UsageMeter, so accounting works the same for every provider kind.
#pragma once

#include <memory>

#include "llm/provider.h"
#include "llm/usage.h"

namespace kforge::llm {

class MeteringProvider : public Provider {
 public:
  // `meter` may be null (prices only).
  MeteringProvider(std::unique_ptr<Provider> inner, PriceTable prices, std::shared_ptr<UsageMeter> meter);

  Response complete(const Request& request) override;
  std::string name() const override { return inner_->name(); }
  void answered_from_store(const Request& request, const Response& response) override;

 private:
  std::unique_ptr<Provider> inner_;
  PriceTable prices_;
  std::shared_ptr<UsageMeter> meter_;
};

}  // namespace kforge::llm
