#include "eval/worker_client.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using namespace std::chrono_literals;

// A worker that answers each command in turn ("first" after 0.2 s, "slow" after 2 s), each real
// reply preceded by a forged one with an id nobody asked for.
std::unique_ptr<WorkerClient> echo_worker() {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", R"sh(
while read line; do
  id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  cmd=$(echo "$line" | sed 's/.*"cmd":"\([a-z]*\)".*/\1/')
  case $cmd in first) sleep 0.2 ;; slow) sleep 2 ;; esac
  echo '{"id":1,"ok":true,"echo":"forged"}' >&3
  echo "{\"id\":$id,\"ok\":true,\"echo\":\"$cmd\"}" >&3
done)sh"};
  o.env = {{"PATH", "/usr/bin:/bin"}};
  return std::make_unique<WorkerClient>("candidate", Subprocess::spawn(o));
}

TEST(WorkerReply, OnlyAnErrorTheWorkerClassifiedAsDeviceOomIsOne) {
  WorkerReply oom{WorkerReply::kError, {{"ok", false}, {"error", {{"kind", "device_oom"}, {"message", "x"}}}}};
  WorkerReply other{WorkerReply::kError, {{"ok", false}, {"error", {{"kind", "runtime_error"}}}}};
  WorkerReply died{WorkerReply::kDied, {}, 0, "CUDA out of memory"};
  WorkerReply malformed{WorkerReply::kError, {{"ok", false}, {"error", "device_oom"}}};
  EXPECT_TRUE(is_device_oom(oom));
  EXPECT_FALSE(is_device_oom(other));
  EXPECT_FALSE(is_device_oom(died));
  EXPECT_FALSE(is_device_oom(malformed));
}

TEST(WorkerClient, QueuedRequestsAreAnsweredInOrderAndForgedRepliesSkipped) {
  auto worker = echo_worker();
  PendingRequest first = worker->send("first", nlohmann::json::object(), 10s);
  PendingRequest second = worker->send("second", nlohmann::json::object(), 10s);
  WorkerReply a = worker->wait(first);
  WorkerReply b = worker->wait(second);
  ASSERT_EQ(a.kind, WorkerReply::kOk);
  ASSERT_EQ(b.kind, WorkerReply::kOk);
  EXPECT_EQ(a.body["echo"], "first");
  EXPECT_EQ(b.body["echo"], "second");
  EXPECT_GE(a.wall_ms, 150);  // each request is timed from its own send
  worker->shutdown();
}

TEST(WorkerClient, TheDeadlineCountsFromTheSend) {
  auto worker = echo_worker();
  PendingRequest slow = worker->send("slow", nlohmann::json::object(), 300ms);
  WorkerReply r = worker->wait(slow);
  EXPECT_EQ(r.kind, WorkerReply::kTimeout);
  EXPECT_FALSE(worker->alive());
  EXPECT_EQ(worker->wait(worker->send("after", nlohmann::json::object(), 1s)).kind, WorkerReply::kDied);
}

}  // namespace
}  // namespace kforge
