#include "eval/evaluator.h"
#include "loop/evaluations.h"
#include "loop/pair_timing.h"

namespace kforge::loop {

EvalResult LocalEvaluations::evaluate(const EvalOptions& options, ProgressFn progress, void* user) {
  return kforge::evaluate(options, progress, user, &workers_);
}

PairMeasurement LocalEvaluations::measure_pair(const EvalOptions& options, const std::filesystem::path& best,
                                               const std::filesystem::path& challenger, ProgressFn progress, void* user) {
  return loop::measure_pair(options, best, challenger, workers_, progress, user);
}

nlohmann::json LocalEvaluations::profile(const profile::ProfileOptions& options, ProgressFn progress, void* user) {
  return profile::run_profile(options, progress, user);
}

}  // namespace kforge::loop
