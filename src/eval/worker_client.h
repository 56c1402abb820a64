// One worker process (reference or candidate) and the request/reply exchange with it.
#pragma once

#include <chrono>
#include <memory>
#include <random>
#include <string>

#include <nlohmann/json.hpp>

#include "util/subprocess.h"

namespace kforge {

struct WorkerReply {
  enum Kind {
    kOk,          // the worker answered and the command succeeded
    kError,       // the worker answered with {"ok": false, "error": {...}}
    kTimeout,     // no answer before the deadline (the worker has been killed)
    kDied,        // the worker exited or was killed before answering
    kFlood,       // the worker printed more than the log cap (it has been killed)
    kProtocol,    // the answer was not valid JSON, or (from the candidate) not the reply to the request
  } kind = kOk;
  nlohmann::json body;      // the reply object (kOk, kError)
  double wall_ms = 0;       // from sending the request to receiving the answer, kforge's clock
  std::string detail;       // human-readable explanation for the non-answer kinds
};

// Whether a worker answered that the device ran out of memory (the worker's own classification of
// its error: gpu_errors.py).
bool is_device_oom(const WorkerReply& reply);

// A request sent to a worker and not yet answered.
struct PendingRequest {
  std::string cmd;
  nlohmann::json args;  // what was asked (a candidate's reply is checked against it: candidate_replies.h)
  std::uint64_t id = 0;
  std::chrono::steady_clock::time_point sent, deadline;
};

class WorkerClient {
 public:
  WorkerClient(std::string role, std::unique_ptr<Subprocess> process);

  // Sends {"cmd": cmd, ...args, "id": n} and waits up to `timeout` for the matching reply.
  WorkerReply request(const std::string& cmd, nlohmann::json args, std::chrono::duration<double> timeout);

  // The two halves of request(), so that both workers can work at once: send to one, send to the
  // other, then wait for each. A worker answers in order; wait for one request before the next.
  PendingRequest send(const std::string& cmd, nlohmann::json args, std::chrono::duration<double> timeout);
  WorkerReply wait(const PendingRequest& pending);

  void shutdown();  // kills the worker's whole tree
  const std::string& role() const { return role_; }
  Subprocess& process() { return *process_; }
  bool alive() const { return alive_; }

 private:
  std::string role_;
  std::unique_ptr<Subprocess> process_;
  std::uint64_t next_id_ = 1;
  std::mt19937_64 id_rng_;
  bool alive_ = true;
};

}  // namespace kforge
