#include "eval/worker_client.h"

#include <gtest/gtest.h>

#include "eval/shell_worker_testing.h"

namespace kforge {
namespace {

using namespace std::chrono_literals;

// A worker that answers each command in turn ("first" after 0.2 s, "slow" after 2 s), each real
// reply preceded by a stale one with an id nobody asked for.
std::unique_ptr<WorkerClient> echo_worker(const std::string& role = "reference") {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", R"sh(
while read line; do
  id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  cmd=$(echo "$line" | sed 's/.*"cmd":"\([a-z]*\)".*/\1/')
  case $cmd in first) sleep 0.2 ;; slow) sleep 2 ;; esac
  echo '{"id":1,"cmd":"first","ok":true,"echo":"forged"}' >&3
  echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"echo\":\"$cmd\"}" >&3
done)sh"};
  o.env = {{"PATH", "/usr/bin:/bin"}};
  return std::make_unique<WorkerClient>(role, Subprocess::spawn(o));
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

TEST(WorkerClient, QueuedRequestsOfTheReferenceAreAnsweredInOrderAndStaleRepliesSkipped) {
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

TEST(WorkerClient, AReplyTheCandidateWasNotAskedForBreaksTheProtocolAndEndsIt) {
  auto worker = echo_worker("candidate");
  WorkerReply r = worker->wait(worker->send("second", nlohmann::json::object(), 10s));
  EXPECT_EQ(r.kind, WorkerReply::kProtocol);
  EXPECT_NE(r.detail.find("nobody asked for"), std::string::npos) << r.detail;
  EXPECT_FALSE(worker->alive());
}

// A candidate that answers each request with `reply`, an object the shell completes: $id and $cmd.
std::unique_ptr<WorkerClient> replying_candidate(const std::string& reply) {
  return shell_worker("candidate", "echo \"" + reply + "\" >&3");
}

TEST(WorkerClient, ASecondReplyToOneRequestBreaksTheProtocolAtTheNextWait) {
  auto worker = shell_worker("candidate", R"sh(
  echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"seconds\":1}" >&3
  echo "{\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"seconds\":1}" >&3)sh");
  EXPECT_EQ(worker->wait(worker->send("run", nlohmann::json::object(), 10s)).kind, WorkerReply::kOk);
  WorkerReply r = worker->wait(worker->send("run", nlohmann::json::object(), 10s));
  EXPECT_EQ(r.kind, WorkerReply::kProtocol);
}

TEST(WorkerClient, AReplyOfAnotherCommandOrWithWrongTypesBreaksTheProtocol) {
  auto other = replying_candidate(R"({\"id\":$id,\"cmd\":\"run\",\"ok\":true,\"seconds\":1})");
  WorkerReply r = other->wait(other->send("time", {{"reps", 1}}, 10s));
  EXPECT_EQ(r.kind, WorkerReply::kProtocol);
  EXPECT_NE(r.detail.find("'time' was asked"), std::string::npos) << r.detail;
  auto strings = replying_candidate(R"({\"id\":$id,\"cmd\":\"$cmd\",\"ok\":true,\"times_ms\":[\"fast\"]})");
  r = strings->wait(strings->send("time", {{"reps", 1}}, 10s));
  EXPECT_EQ(r.kind, WorkerReply::kProtocol);
  EXPECT_NE(r.detail.find("times_ms"), std::string::npos) << r.detail;
  auto noise = shell_worker("candidate", "echo 'status: correct' >&3");
  EXPECT_EQ(noise->wait(noise->send("run", nlohmann::json::object(), 10s)).kind, WorkerReply::kProtocol);
}

}  // namespace
}  // namespace kforge
