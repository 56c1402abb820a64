// Workers started before an evaluation needs them. Starting one (Python, torch, the device's
// context) takes seconds, often longer than the evaluation's own work.
//  - A candidate worker serves exactly one candidate and is then killed: whatever a candidate did
//    to its process must not reach the next one. With `spare_candidates`, the pool starts the next
//    candidate's worker (which has never seen a candidate) ahead of need: when an evaluation ends
//    (the loop then waits for its LLM, and nothing competes with the evaluation itself), or when
//    one begins (back-to-back evaluations: the start overlaps the checks, never the timing).
//  - The reference worker never runs candidate code (it reads the candidate's outputs as plain
//    tensors), so it is kept for the next evaluation of the same problem file, reset in between.
// Pools are thread-safe: the loop and the bench evaluate in parallel.
#pragma once

#include <condition_variable>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "eval/eval_options.h"
#include "eval/worker_client.h"
#include "eval/worker_launch.h"

namespace kforge {

struct PooledWorker {
  ~PooledWorker();  // kills the worker's tree, then removes its directories

  std::unique_ptr<WorkerClient> client;
  std::filesystem::path root;    // the directories made for this worker, removed with it
  std::filesystem::path home;    // its HOME, TMPDIR and working directory
  std::filesystem::path shared;  // candidate: the directory its sandbox reads the inputs from
  std::string isolation;
  std::string origin;            // "started", "started ahead", "kept from an earlier evaluation"
  std::string key;               // worker_pool_key() of the settings it was started with
  std::filesystem::path problem; // reference: the problem file it serves
  // "warm" (a new worker) or "reset" (a kept reference), until its answer is read.
  std::optional<PendingRequest> preparing;
  std::optional<WorkerReply> start_failure;  // the worker did not get ready (its reply to `preparing`)
  int evaluations = 0;           // evaluations served so far
  std::optional<std::uint64_t> tmp_bytes;  // candidate in a sandbox: the size of its private tmpfs

  // Why the candidate's writing broke its quota (its tmpfs is full, or its own folder holds more than
  // the tmpfs size), or none. Read from outside, while the worker still runs.
  std::optional<std::string> disk_breach() const;

  // Reads the answer to `preparing` if it is still outstanding (requests sent after it wait behind it
  // in the worker). False when the worker did not get ready: start_failure says why.
  bool wait_ready();
};

struct WorkerPair {
  std::unique_ptr<PooledWorker> ref, cand;  // ref is empty for build-only evaluations
  std::optional<EvalOptions> options;       // what they were taken for
  int threads = 0;
  double waited_seconds = 0;                // for workers started ahead to get ready
  WorkerDirs dirs() const;
  nlohmann::json describe() const;  // for the EvalResult's env: where each worker came from
};

enum class StartAhead { kWhenEvaluationEnds, kWhenEvaluationBegins };

class WorkerPool {
 public:
  explicit WorkerPool(int spare_candidates = 0, StartAhead when = StartAhead::kWhenEvaluationEnds);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Both workers for one evaluation. Ones the pool had are ready; ones started now may still be
  // starting: send the first request, then wait_ready() before waiting for its answer, so the start
  // overlaps other work. Logs go to options.log_dir (which must exist) from here on.
  WorkerPair take(const EvalOptions& options, int threads, bool with_reference);

  // After the evaluation. The candidate is killed (in the background); the reference is kept when
  // `reference_reusable` (its reset is answered while nobody waits), otherwise killed too.
  void give_back(WorkerPair pair, bool reference_reusable, double reference_timeout_s);

  // Kills the kept references of `problem`: once a caller has no more evaluations of it, a kept
  // reference only holds memory (a bench of 100 problems would otherwise keep 100 interpreters).
  void release_references(const std::filesystem::path& problem);

  // Waits until no worker is still starting, then holds back new starts until the guard is gone: a
  // timing must not share the machine with an interpreter loading torch.
  class Quiet {
   public:
    explicit Quiet(WorkerPool* pool) : pool_(pool) {}
    Quiet(Quiet&& other) noexcept : pool_(other.pool_) { other.pool_ = nullptr; }
    Quiet(const Quiet&) = delete;
    ~Quiet();

   private:
    WorkerPool* pool_;
  };
  Quiet quiet();

 private:
  std::unique_ptr<PooledWorker> start(WorkerRole role, const EvalOptions& options, int threads,
                                      const std::string& key, bool ahead);
  std::unique_ptr<PooledWorker> take_one(WorkerRole role, const EvalOptions& options, int threads);
  void start_ahead(const EvalOptions& options, int threads, const std::string& key);
  void retire(std::unique_ptr<PooledWorker> worker);
  void end_quiet();

  const int spare_candidates_;
  const StartAhead when_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<PooledWorker>> idle_;  // started ahead, or kept
  int quiet_ = 0;
  std::vector<std::function<void()>> held_starts_;  // starts asked for while quiet
  std::vector<std::thread> retiring_;
};

// Removes worker folders (kforge-eval-PID-*, kforge-ref-PID-*) that a kforge process which is no longer
// running left in `temp_dir` (a crash, a kill -9). Returns how many were removed.
int remove_stale_worker_dirs(const std::filesystem::path& temp_dir);

// The key under which an idle worker can stand in for a new one: everything its start depends on
// (command, environment, sandbox, limits, device), with its own directories left out.
std::string worker_pool_key(WorkerRole role, const EvalOptions& options, int threads);

}  // namespace kforge
