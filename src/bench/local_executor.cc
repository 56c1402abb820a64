#include "bench/local_executor.h"

#include <mutex>

#include "eval/evaluator.h"

namespace kforge::bench {

namespace {

struct Teller {
  const std::function<void(const std::string&)>* event;
  std::string name;
};

// Of an evaluation's phases, only the scheduling ones are news to someone watching a whole bench.
void tell_scheduling(const std::string& phase, void* user) {
  auto* t = static_cast<Teller*>(user);
  if (*t->event && (phase.starts_with("waiting for memory") || phase.starts_with("out of memory")))
    (*t->event)(t->name + ": " + phase);
}

}  // namespace

ExecutedEval LocalExecutor::evaluate(const EvalOptions& options, bool alone) {
  Teller teller{&event_, options.candidate.stem().string()};
  if (alone) {
    std::unique_lock lock(device_);
    return {kforge::evaluate(options, tell_scheduling, &teller, &workers_), "local"};
  }
  std::shared_lock lock(device_);
  return {kforge::evaluate(options, tell_scheduling, &teller, &workers_), "local"};
}

}  // namespace kforge::bench
