// The `local` executor: evaluations run in this process on this host's devices, sharing one
// worker pool (a problem's reference process serves its check and its timing). A timing that
// must run alone waits until no other evaluation of the bench runs.
#pragma once

#include <shared_mutex>

#include "bench/executor.h"
#include "eval/worker_pool.h"

namespace kforge::bench {

class LocalExecutor : public Executor {
 public:
  ExecutedEval evaluate(const EvalOptions& options, bool alone) override;

 private:
  std::shared_mutex device_;  // shared: other evaluations; exclusive: a timing that runs alone
  WorkerPool workers_;
};

}  // namespace kforge::bench
