#include "loop/pair_timing.h"

#include "eval/eval_view.h"
#include "eval/head_to_head.h"

namespace kforge::loop {

namespace {

// A contender's error message, "" without one.
std::string message(const ContenderTiming& contender) {
  const std::optional<EvalError> error = decode_error(contender.error);
  return error ? error->message : "";
}

}  // namespace

PairMeasurement measure_pair(const EvalOptions& options, const std::filesystem::path& best,
                             const std::filesystem::path& challenger, WorkerPool& pool, ProgressFn progress, void* user) {
  HeadToHead h = compare_candidates(options, best, challenger, pool, progress, user);
  PairMeasurement m;
  m.detail = h.to_json();
  m.complete = h.complete();
  if (!h.problem_error.empty()) m.failure = "the reference failed: " + h.problem_error;
  else if (!h.a.status.empty()) m.failure = "the best candidate failed (" + h.a.status + "): " + message(h.a);
  else if (!h.b.status.empty()) m.failure = "the challenger failed (" + h.b.status + "): " + message(h.b);
  m.vs_best = h.b_vs_a;
  return m;
}

}  // namespace kforge::loop
