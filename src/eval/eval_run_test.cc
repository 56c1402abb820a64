#include "eval/eval_run.h"

#include <gtest/gtest.h>

#include <chrono>

#include "eval/eval_result.h"
#include "eval/shell_worker_testing.h"

namespace kforge {
namespace {

using namespace std::chrono_literals;

// A worker that kills itself with SIGKILL at its first request, as the kernel's out-of-memory killer
// would, while the out-of-memory count goes from `before` to `after`.
struct KilledWorker {
  KilledWorker(const std::string& role, std::int64_t before, std::int64_t after)
      : worker(shell_worker(role, "kill -9 $$")) {
    run.oom_kills_at_start = before;
    run.count_oom_kills = [after] { return std::optional<std::int64_t>(after); };
  }
  WorkerReply ask() { return worker->request("check", nlohmann::json::object(), 10s); }

  EvalOptions options;
  EvalRun run{options, nullptr, nullptr};
  std::unique_ptr<WorkerClient> worker;
};

// The error of a reference killed while the out-of-memory count went from `before` to `after`.
nlohmann::json killed_reference_error(std::int64_t before, std::int64_t after) {
  KilledWorker k("reference", before, after);
  k.run.ref = k.worker.get();
  k.run.fail_from_reference(k.ask(), "checking outputs");
  k.run.ref = nullptr;
  EXPECT_EQ(k.run.status, status::kProblemError);
  return k.run.doc["error"];
}

TEST(HostOom, AReferenceTheOutOfMemoryKillerEndedIsOutOfHostMemory) {
  // Seen on an H100 machine: 45_Average_Pooling_2D's reference held 129 GB of host memory.
  nlohmann::json error = killed_reference_error(4, 5);
  EXPECT_EQ(error.value("cause", ""), "host_oom");  // retried alone when it shared the machine
  EXPECT_NE(error.value("message", "").find("out-of-memory killer"), std::string::npos);
}

TEST(HostOom, AReferenceKilledWithoutAnOutOfMemoryKillIsNot) {
  nlohmann::json error = killed_reference_error(4, 4);
  EXPECT_FALSE(error.contains("cause"));
  EXPECT_NE(error.value("message", "").find("killed by signal 9"), std::string::npos);
}

TEST(HostOom, ACandidateTheOutOfMemoryKillerEndedIsARuntimeErrorOfItsOwnKind) {
  KilledWorker k("candidate", 0, 1);
  k.run.cand = k.worker.get();
  k.run.fail_from_candidate(k.ask(), "running trial 1");
  EXPECT_EQ(k.run.status, status::kRuntimeError);
  EXPECT_EQ(k.run.doc["error"].value("kind", ""), "host_oom");
  k.run.cand = nullptr;
}

TEST(HostOom, WithoutACounterNoDeathIsPutDownToMemory) {
  KilledWorker k("candidate", 0, 1);
  k.run.oom_kills_at_start = std::nullopt;
  k.run.cand = k.worker.get();
  k.run.fail_from_candidate(k.ask(), "running trial 1");
  EXPECT_EQ(k.run.doc["error"].value("kind", ""), "crash");
  k.run.cand = nullptr;
}

}  // namespace
}  // namespace kforge
