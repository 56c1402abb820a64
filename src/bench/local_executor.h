// The `local` executor: evaluations run in this process on this host's devices, sharing one
// worker pool (a problem's reference process serves its check and its timing). A timing that
// must run alone waits until no other evaluation of the bench runs.
#pragma once

#include <functional>
#include <shared_mutex>
#include <string>

#include "bench/executor.h"
#include "eval/worker_pool.h"

namespace kforge::bench {

class LocalExecutor : public Executor {
 public:
  ExecutedEval evaluate(const EvalOptions& options, bool alone) override;
  // A kept reference only holds memory once its problem is done (100 problems, 100 interpreters).
  void problem_done(const std::filesystem::path& problem) override { workers_.release_references(problem); }
  // Where an evaluation's waits for device memory and out-of-memory retries are told (the bench's
  // progress lines), as "<candidate>: waiting for memory: ...".
  void report_to(std::function<void(const std::string&)> event) { event_ = std::move(event); }

 private:
  std::shared_mutex device_;  // shared: other evaluations; exclusive: a timing that runs alone
  WorkerPool workers_;
  std::function<void(const std::string&)> event_;
};

}  // namespace kforge::bench
