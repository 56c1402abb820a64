#include "eval/device_lock.h"

#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "util/paths.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

const DeviceLockSpec kGpu{true, "CUDA_VISIBLE_DEVICES"};  // as the cuda target declares it

TEST(DeviceLockName, MapsVisibleDevicesToPhysicalIds) {
  EXPECT_EQ(device_lock_name("cpu", DeviceLockSpec{}, nullptr), "");
  EXPECT_EQ(device_lock_name("cuda", kGpu, nullptr), "cuda-0");
  EXPECT_EQ(device_lock_name("cuda:1", kGpu, ""), "cuda-1");
  EXPECT_EQ(device_lock_name("cuda:1", kGpu, "2,3"), "cuda-3");
  EXPECT_EQ(device_lock_name("cuda", kGpu, "GPU-1a2b/x"), "cuda-GPU-1a2b_x");
  EXPECT_EQ(device_lock_name("cuda:5", kGpu, "0,1"), "cuda-5");  // out of range: CUDA itself will reject it
  // The kind comes from the device, not from a list kforge knows.
  EXPECT_EQ(device_lock_name("xpu:1", {true, "ZE_AFFINITY_MASK"}, "4,6"), "xpu-6");
}

TEST(DeviceLock, NoLockUnlessTheTargetAsksForOne) {
  fs::path dir = make_temp_dir("kforge-lock-test-");
  EXPECT_FALSE(DeviceLock::acquire("cpu", DeviceLockSpec{}, dir));
  EXPECT_FALSE(DeviceLock::acquire("cuda:0", DeviceLockSpec{}, dir));
  fs::remove_all(dir);
}

// Whether a separate process could take the lock right now (flock is per open file, so a child
// process is the honest test of the cross-process behaviour).
bool free_in_other_process(const std::string& device, const fs::path& dir) {
  pid_t pid = fork();
  if (pid == 0) _exit(DeviceLock::try_acquire(device, kGpu, dir) ? 0 : 1);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

TEST(DeviceLock, OneHolderPerGpuAcrossProcesses) {
  fs::path dir = make_temp_dir("kforge-lock-test-");
  {
    auto held = DeviceLock::acquire("cuda:0", kGpu, dir);
    ASSERT_TRUE(held);
    EXPECT_EQ(held->path(), dir / "cuda-0.lock");
    EXPECT_FALSE(free_in_other_process("cuda:0", dir));
    EXPECT_FALSE(free_in_other_process("cuda", dir));   // the same GPU, spelled differently
    EXPECT_TRUE(free_in_other_process("cuda:1", dir));  // another GPU is independent
    EXPECT_FALSE(DeviceLock::try_acquire("cuda:0", kGpu, dir));  // a second open in this process waits too
  }
  EXPECT_TRUE(free_in_other_process("cuda:0", dir));  // released when the holder goes away
  fs::remove_all(dir);
}

TEST(DeviceLock, WaiterProceedsWhenHolderExits) {
  fs::path dir = make_temp_dir("kforge-lock-test-");
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t holder = fork();
  if (holder == 0) {
    auto lock = DeviceLock::acquire("cuda:0", kGpu, dir);
    (void)!write(ready[1], "x", 1);
    usleep(300 * 1000);
    _exit(0);  // dies holding the lock: the kernel releases it
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  bool waited = false;
  auto lock = DeviceLock::acquire("cuda:0", kGpu, dir, [&](const fs::path&) { waited = true; });
  ASSERT_TRUE(lock);
  EXPECT_TRUE(waited);
  EXPECT_GT(lock->waited_seconds(), 0.1);
  waitpid(holder, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
  fs::remove_all(dir);
}

TEST(DeviceLock, MovedLockStaysHeld) {
  fs::path dir = make_temp_dir("kforge-lock-test-");
  std::optional<DeviceLock> outer;
  {
    auto lock = DeviceLock::acquire("cuda:2", kGpu, dir);
    outer = std::move(lock);
  }
  EXPECT_FALSE(free_in_other_process("cuda:2", dir));
  outer.reset();
  EXPECT_TRUE(free_in_other_process("cuda:2", dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kforge
