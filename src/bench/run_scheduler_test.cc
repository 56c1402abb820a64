// The scheduling of bench and model child runs (bench/run_scheduler.h): bounded concurrency, device
// assignment, a task that stops the schedule, the cancel flag; and a child run without an executor.
#include "bench/run_scheduler.h"

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

#include <unistd.h>

#include <gtest/gtest.h>
#include <fmt/format.h>

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;

TEST(Schedule, RunsEveryTaskWithAtMostJobsAtOnce) {
  std::atomic<int> running{0}, most{0};
  std::mutex m;
  std::set<std::size_t> seen;
  ScheduleOptions o;
  o.jobs = 2;
  schedule(5, o, [&](std::size_t i, const std::string&) {
    int now = ++running;
    int prev = most.load();
    while (now > prev && !most.compare_exchange_weak(prev, now)) {}
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    --running;
    std::lock_guard lock(m);
    seen.insert(i);
    return true;
  });
  EXPECT_EQ(seen, (std::set<std::size_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(most.load(), 2);
}

TEST(Schedule, WorkersTakeTheirDevicesInTurn) {
  std::mutex m;
  std::set<std::string> devices;
  ScheduleOptions o;
  o.jobs = 3;
  o.devices = {"cuda:0", "cuda:1"};
  schedule(6, o, [&](std::size_t, const std::string& d) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::lock_guard lock(m);
    devices.insert(d);
    return true;
  });
  EXPECT_EQ(devices, (std::set<std::string>{"cuda:0", "cuda:1"}));
}

TEST(Schedule, ATaskThatReturnsFalseStopsNewStarts) {
  std::atomic<int> started{0};
  ScheduleOptions o;
  o.jobs = 1;
  schedule(10, o, [&](std::size_t i, const std::string&) {
    ++started;
    return i < 2;
  });
  EXPECT_EQ(started.load(), 3);
}

TEST(Schedule, NothingStartsOnceCancelled) {
  llm::CancelFlag cancel{false};
  std::atomic<int> started{0};
  ScheduleOptions o;
  o.jobs = 2;
  o.cancel = &cancel;
  schedule(10, o, [&](std::size_t, const std::string&) {
    ++started;
    cancel = true;
    return true;
  });
  EXPECT_LE(started.load(), 2);
  schedule(0, o, [&](std::size_t, const std::string&) { return true; });  // no tasks: returns at once
}

TEST(ChildRun, RunsToItsEndWithItsOutputInTheLog) {
  const fs::path log = fs::temp_directory_path() / fmt::format("kforge-child-run-{}.log", ::getpid());
  auto r = run_child_run({"sh", "-c", "echo hello; exit 3"}, log, nullptr, nullptr);
  EXPECT_TRUE(r.exit.exited);
  EXPECT_EQ(r.exit.code, 3);
  EXPECT_FALSE(r.interrupted);
  std::ifstream in(log);
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "hello");
  fs::remove(log);
}

}  // namespace
}  // namespace kforge::bench
