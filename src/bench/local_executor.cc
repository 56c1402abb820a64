#include "bench/local_executor.h"

#include <mutex>

#include "eval/evaluator.h"

namespace kforge::bench {

ExecutedEval LocalExecutor::evaluate(const EvalOptions& options, bool alone) {
  if (alone) {
    std::unique_lock lock(device_);
    return {kforge::evaluate(options, nullptr, nullptr, &workers_), "local"};
  }
  std::shared_lock lock(device_);
  return {kforge::evaluate(options, nullptr, nullptr, &workers_), "local"};
}

}  // namespace kforge::bench
