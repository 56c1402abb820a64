#include "eval/memory_ledger.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include "util/paths.h"
#include "util/scoped_env.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

constexpr std::uint64_t kMiB = 1ull << 20;

// A budget of 90 MiB (100 MiB free less the margin).
MemoryRequest request(std::uint64_t mib, bool alone = false) { return {mib * kMiB, alone, 100 * kMiB, std::nullopt}; }

class MemoryLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = make_temp_dir("kforge-memory-test-"); }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path ledger() const { return dir_ / "cpu-0.memory"; }
  fs::path dir_;
};

// A child process that holds a reservation until told to let it go (a byte on `release_fd`) or,
// with `crash`, dies holding it.
struct Holder {
  pid_t pid = -1;
  int release_fd = -1;
};

Holder hold_in_child(const fs::path& ledger, std::uint64_t mib, bool crash) {
  int started[2], release[2];
  EXPECT_EQ(pipe(started), 0);
  EXPECT_EQ(pipe(release), 0);
  pid_t pid = fork();
  if (pid == 0) {
    MemoryTicket t = reserve_memory(ledger, request(mib));
    char c = 1;
    (void)!write(started[1], &c, 1);
    (void)!read(release[0], &c, 1);
    if (crash) _exit(0);  // no release: the process is gone, its reservation with it
    t.release();
    _exit(0);
  }
  close(started[1]);
  close(release[0]);
  char c;
  EXPECT_EQ(read(started[0], &c, 1), 1);
  close(started[0]);
  return {pid, release[1]};
}

void let_go(Holder& h) {
  char c = 1;
  EXPECT_EQ(write(h.release_fd, &c, 1), 1);
  close(h.release_fd);
  int status = 0;
  waitpid(h.pid, &status, 0);
}

TEST(MemoryLedgerPath, NamedAfterThePhysicalDevice) {
  EXPECT_EQ(memory_ledger_path("cpu", DeviceLockSpec{}, "/l"), fs::path("/l/cpu-0.memory"));
  ScopedEnv visible("KFORGE_TEST_VISIBLE", "2,3");
  EXPECT_EQ(memory_ledger_path("cuda:1", {false, "KFORGE_TEST_VISIBLE"}, "/l"), fs::path("/l/cuda-3.memory"));
}

TEST_F(MemoryLedgerTest, ReservationsThatFitStartAtOnceAndKnowTheyShared) {
  MemoryTicket a = reserve_memory(ledger(), request(40));
  EXPECT_EQ(a.budget_bytes(), 90 * kMiB);
  EXPECT_FALSE(a.alone());
  MemoryTicket b = reserve_memory(ledger(), request(40));  // 80 of 90 MiB
  EXPECT_TRUE(b.release());                                // a ran beside it when it started
  EXPECT_TRUE(a.release());                                // b started while a ran
  MemoryTicket c = reserve_memory(ledger(), request(40));
  EXPECT_FALSE(c.release());  // alone on the device throughout
  EXPECT_FALSE(c.release());  // released once only
}

TEST_F(MemoryLedgerTest, WaitsForAnotherProcessUntilItsMemoryIsReleased) {
  Holder other = hold_in_child(ledger(), 60, false);
  std::string why;  // read after the join
  std::atomic<bool> told{false}, released{false}, waited_before_release{false};
  std::thread t([&] {
    MemoryTicket mine = reserve_memory(ledger(), request(40), [&](const std::string& w) {
      why = w;
      waited_before_release = !released;
      told = true;
    });
    EXPECT_TRUE(released);  // it started only after the other process let go
    EXPECT_GT(mine.waited_seconds(), 0);
  });
  while (!told) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  released = true;
  let_go(other);
  t.join();
  EXPECT_TRUE(waited_before_release);
  EXPECT_NE(why.find("needs 40.0 MiB; 60.0 MiB of 90.0 MiB held by 1 evaluation(s)"), std::string::npos) << why;
}

TEST_F(MemoryLedgerTest, AWaitBehindAnEvaluationOverTheBudgetSaysItRunsAlone) {
  Holder big = hold_in_child(ledger(), 120, false);  // over the 90 MiB budget: admitted alone
  std::string why;
  std::atomic<bool> told{false};
  std::thread t([&] {
    MemoryTicket mine = reserve_memory(ledger(), request(40), [&](const std::string& w) {
      why = w;
      told = true;
    });
  });
  while (!told) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  let_go(big);
  t.join();
  EXPECT_NE(why.find("needs 40.0 MiB; 120.0 MiB held by 1 evaluation(s), more than the 90.0 MiB budget: one runs alone"),
            std::string::npos)
      << why;
}

TEST_F(MemoryLedgerTest, AReservationOfAProcessThatDiedIsDropped) {
  Holder crashed = hold_in_child(ledger(), 80, true);
  let_go(crashed);  // it exits holding its reservation
  MemoryTicket mine = reserve_memory(ledger(), request(40));
  EXPECT_FALSE(mine.release());
}

TEST_F(MemoryLedgerTest, AloneWaitsForEveryoneAndBlocksEveryone) {
  Holder other = hold_in_child(ledger(), 10, false);
  std::atomic<bool> released{false};
  std::atomic<bool> waiting{false};
  std::thread t([&] {
    MemoryTicket mine = reserve_memory(ledger(), request(10, true), [&](const std::string&) { waiting = true; });
    EXPECT_TRUE(released);
    EXPECT_TRUE(mine.alone());
  });
  while (!waiting) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  released = true;
  let_go(other);
  t.join();
}

TEST_F(MemoryLedgerTest, LargerThanTheDeviceStartsAloneOnAnIdleDevice) {
  MemoryTicket big = reserve_memory(ledger(), request(500));
  EXPECT_TRUE(big.alone());
}

TEST(FormatBytes, BinaryUnits) {
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(3 * 1024), "3.00 KiB");
  EXPECT_EQ(format_bytes(40 * kMiB), "40.0 MiB");
  EXPECT_EQ(format_bytes(5ull << 30), "5.00 GiB");
}

}  // namespace
}  // namespace kforge
