// Where a bench's evaluations run (docs/bench.md#executors): `local` (this host's devices, in this
// process) or `ray` (tasks on a Ray cluster whose results come back here). The bench loop, the
// store and every model call stay in this process whichever executor runs the evaluations.
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"
#include "eval/eval_result.h"

namespace kforge::bench {

struct ExecutedEval {
  EvalResult result;
  std::string node;  // where it ran: "local", or the Ray node ("host/1a2b3c4d")
};

// What a node answered to an evaluation request (bench/eval_request.h).
struct ExecutedRequest {
  nlohmann::json result;  // an EvalResult, or for a pair a loop::PairMeasurement
  std::string node;
};

// The executor can run nothing more (its Ray driver died): the bench stops as interrupted and
// leaves the problem to `--resume`, rather than recording a failure that is not the candidate's.
class ExecutorLost : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one evaluation and waits for its result; called from several threads at once. `alone`:
  // a timing that must have its device to itself (CPU timings, docs/bench.md#scheduling).
  // Throws when the evaluation could not run (the message says why), ExecutorLost as above.
  virtual ExecutedEval evaluate(const EvalOptions& options, bool alone) = 0;
  // The bench has no more evaluations of `problem`: what is kept for it (a reference process) can go.
  virtual void problem_done(const std::filesystem::path& /*problem*/) {}

  // Whether the runs of a `--llm` bench send their evaluations here (bench/evaluation_relay.h) rather
  // than evaluating in their own processes, as they do with the local executor (its worker pool
  // starts the next candidate's process while the model writes).
  virtual bool relays_runs() const { return false; }
  // Runs a request made elsewhere (a relayed run's evaluation or head-to-head pair) and waits for
  // it; only an executor that relays runs has this. Throws as evaluate() does.
  virtual ExecutedRequest run_request(const nlohmann::json& /*request*/) {
    throw std::logic_error("this executor runs no relayed requests");
  }
};

}  // namespace kforge::bench
