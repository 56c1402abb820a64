// The bench's side of a relayed run (bench/relayed_evaluations.h has the protocol): each request
// the run's `kforge run` sends is run through the bench's executor (as a Ray task, for `--executor
// ray`) on a thread of its own, and its answer queued for the run. Results are stored by the run,
// as it stores local ones; the bench stores nothing here.
#pragma once

#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bench/executor.h"

namespace kforge::bench {

class EvaluationRelay {
 public:
  explicit EvaluationRelay(Executor& executor) : executor_(executor) {}
  ~EvaluationRelay();  // waits for the requests still running (their answers go nowhere)
  EvaluationRelay(const EvaluationRelay&) = delete;
  EvaluationRelay& operator=(const EvaluationRelay&) = delete;

  // A line the run sent on its reply pipe: starts its request.
  void handle(const std::string& line);
  // Sends the run the answers that are ready, each with `send` (false: the run is gone).
  void deliver(const std::function<bool(const std::string&)>& send);

  std::string lost() const;       // why the executor can run nothing more; empty while it can
  std::string last_node() const;  // where the latest request ran

 private:
  Executor& executor_;
  mutable std::mutex mutex_;
  std::deque<std::string> answers_;
  std::vector<std::thread> running_;
  std::string lost_, last_node_;
};

}  // namespace kforge::bench
