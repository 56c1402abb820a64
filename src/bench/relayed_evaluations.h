// The refinement loop's evaluations sent to the bench that runs this `kforge run` (a `--llm` bench
// whose executor relays runs, e.g. `--executor ray`; bench/evaluation_relay.h is the bench's side).
// The run keeps its loop, store and model calls; each evaluation or head-to-head pair goes to the
// bench as a request (bench/eval_request.h: sources and settings, nothing secret) and its result
// comes back here, where the loop stores it as it would a local one.
//
// Protocol, one JSON object per line, over the pipes the bench spawned the run with (a request on
// fd 3, the run's reply pipe; answers on stdin), any number in flight:
//   run -> bench : {"id": I, "request": R}
//   bench -> run : {"id": I, "event": "result", "node": N, "result": EvalResult | PairMeasurement}
//                  {"id": I, "event": "failed", "message": M}   the request could not run
//                  {"id": I, "event": "lost", "message": M}     the executor is gone: stop, resume later
// The bench closing the pipe (it was killed) is "lost" for everything in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "bench/executor.h"
#include "loop/evaluations.h"

namespace kforge::bench {

class RelayedEvaluations : public loop::Evaluations {
 public:
  // `answers_in`: where the bench's answers arrive; `requests_out`: where requests go. Both stay open
  // (and are kept from this process's children).
  RelayedEvaluations(int answers_in, int requests_out);
  ~RelayedEvaluations() override;

  EvalResult evaluate(const EvalOptions& options, ProgressFn progress, void* user) override;
  loop::PairMeasurement measure_pair(const EvalOptions& options, const std::filesystem::path& best,
                                     const std::filesystem::path& challenger, ProgressFn progress, void* user) override;
  // Not taken: a profile runs the candidate under a profiler on this host, where the run's
  // evaluations do not run (docs/bench.md#executors).
  nlohmann::json profile(const profile::ProfileOptions& options, ProgressFn progress, void* user) override;

 private:
  ExecutedRequest run(const nlohmann::json& request, ProgressFn progress, void* user);
  void read_answers();                     // the reader thread
  void lose(const std::string& reason);    // mutex held: fails everything in flight

  int in_, out_;
  std::thread reader_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::map<std::int64_t, std::promise<nlohmann::json>> waiting_;
  std::int64_t next_id_ = 1;
  std::string lost_;  // why no answer will come any more; empty while the bench answers
};

}  // namespace kforge::bench
