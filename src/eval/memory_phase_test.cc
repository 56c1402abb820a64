#include "eval/memory_phase.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using json = nlohmann::json;

TEST(ProcessBytes, WeightsInputsThriceTheForwardsPeakAndAKeptOutput) {
  json e = {{"method", "meta"},
            {"parameter_bytes", 1000},
            {"input_bytes", 100},
            {"output_bytes", 10},
            {"forward_peak_bytes", 50}};
  EXPECT_EQ(process_bytes(e), 1000u + 300u + 50u + 10u);
  EXPECT_EQ(process_bytes({{"method", "unknown"}, {"reason", "no meta kernel"}}), std::nullopt);
}

TEST(EvaluationBytes, EveryProcessAndTheTimedOutputsEachCandidateKeeps) {
  json e = {{"method", "meta"},
            {"parameter_bytes", 0},
            {"input_bytes", 100},
            {"output_bytes", 10},
            {"forward_peak_bytes", 10}};
  EXPECT_EQ(evaluation_bytes(e, 2, false, 5), 2u * 320u);
  EXPECT_EQ(evaluation_bytes(e, 2, true, 5), 2u * 320u + 60u);  // six kept outputs: a block and the fresh call
  EXPECT_EQ(evaluation_bytes(e, 3, true, 5), 3u * 320u + 120u);  // a head-to-head: two candidates
  EXPECT_EQ(evaluation_bytes({{"method", "unknown"}}, 2, true, 5), std::nullopt);
  EXPECT_EQ(evaluation_bytes(e, 2, true, 5, 1000), 2u * (320u + 1000u) + 60u);  // each worker's CUDA context
}

TEST(DeviceShare, TheWholeBudgetAloneElseTheEvaluationsOwnEstimate) {
  EXPECT_EQ(device_share_bytes(true, 100ull << 30, 40ull << 30), 100ull << 30);
  EXPECT_EQ(device_share_bytes(false, 100ull << 30, 40ull << 30), 40ull << 30);
}

json finished(const char* status, json error, bool shared, bool alone = false) {
  return {{"status", status}, {"error", error}, {"memory", {{"shared_device", shared}, {"alone", alone}}}};
}

TEST(RetryAlone, OnlyAnOutOfMemoryBesideOtherEvaluations) {
  EXPECT_TRUE(retry_alone(finished("runtime_error", {{"kind", "device_oom"}}, true)));
  EXPECT_TRUE(retry_alone(finished("problem_error", {{"kind", "problem_error"}, {"cause", "device_oom"}}, true)));
  // Alone on the device already: the second try would fail the same way.
  EXPECT_FALSE(retry_alone(finished("runtime_error", {{"kind", "device_oom"}}, false)));
  EXPECT_FALSE(retry_alone(finished("runtime_error", {{"kind", "device_oom"}}, true, true)));
  // Other failures are the candidate's or the problem's whatever else ran.
  EXPECT_FALSE(retry_alone(finished("runtime_error", {{"kind", "crash"}}, true)));
  EXPECT_FALSE(retry_alone(finished("problem_error", {{"kind", "problem_error"}}, true)));
  EXPECT_FALSE(retry_alone({{"status", "runtime_error"}, {"error", {{"kind", "device_oom"}}}}));  // no reservation
  // Out of host memory (a worker the kernel's out-of-memory killer ended), beside other evaluations.
  EXPECT_TRUE(retry_alone(finished("runtime_error", {{"kind", "host_oom"}}, true)));
  EXPECT_TRUE(retry_alone(finished("problem_error", {{"kind", "problem_error"}, {"cause", "host_oom"}}, true)));
  EXPECT_FALSE(retry_alone(finished("problem_error", {{"kind", "problem_error"}, {"cause", "host_oom"}}, false)));
}

TEST(MemoryPhase, AnOutOfMemoryWithTheTrialsOnTheDeviceIsTriedAgainWithThemInHostMemory) {
  const auto on = [](const std::string& transport, const std::string& status, const json& error) {
    return json{{"status", status}, {"error", error}, {"env", {{"device_transport", transport}}}};
  };
  EXPECT_TRUE(retry_on_host_path(on("vmm", "runtime_error", {{"kind", "device_oom"}}), false));
  EXPECT_TRUE(retry_on_host_path(on("vmm", "problem_error", {{"kind", "problem_error"}, {"cause", "device_oom"}}), false));
  // Asked for the device path (KFORGE_DEVICE_TRANSPORT=vmm): its failure is the answer.
  EXPECT_FALSE(retry_on_host_path(on("vmm", "runtime_error", {{"kind", "device_oom"}}), true));
  // On the host path already, or another failure.
  EXPECT_FALSE(retry_on_host_path(on("host", "runtime_error", {{"kind", "device_oom"}}), false));
  EXPECT_FALSE(retry_on_host_path(on("vmm", "runtime_error", {{"kind", "crash"}}), false));
  EXPECT_FALSE(retry_on_host_path(on("vmm", "incorrect", json::object()), false));
}

}  // namespace
}  // namespace kforge
