#include "util/memory_cgroup.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>

#include "util/subprocess.h"

namespace kforge {
namespace {

TEST(MemoryCgroup, AChildJoinsItsCgroupAndPassingTheLimitIsCounted) {
  if (auto why = memory_cgroups_unavailable()) GTEST_SKIP() << "no memory cgroup here: " << *why;
  SpawnOptions o;
  // 256 MiB of a memory file under a 64 MiB limit: the pages count, and the kernel ends the child.
  o.argv = {"/bin/sh", "-c", "cat /proc/self/cgroup; head -c 268435456 /dev/zero > /dev/shm/kforge-cgroup-test; "
                             "rm -f /dev/shm/kforge-cgroup-test"};
  o.env = {{"PATH", "/usr/bin:/bin"}};
  o.limits.memory_bytes = 64ull << 20;
  std::filesystem::path dir;
  {
    auto p = Subprocess::spawn(o);
    ASSERT_NE(p->memory_cgroup(), nullptr) << p->memory_cgroup_missing();
    dir = std::filesystem::path(p->memory_cgroup()->procs_file()).parent_path();
    EXPECT_TRUE(std::filesystem::is_directory(dir));
    std::string line;
    p->wait_line(std::chrono::steady_clock::now() + std::chrono::seconds(30), &line);
    p->finish(std::chrono::milliseconds(30000));
    EXPECT_NE(p->log_excerpt().find(dir.filename().string()), std::string::npos) << p->log_excerpt();
    EXPECT_GE(p->memory_cgroup()->oom_kills(), 1) << p->log_excerpt();
    EXPECT_EQ(p->memory_cgroup()->limit_bytes(), 64ull << 20);
  }
  std::filesystem::remove("/dev/shm/kforge-cgroup-test");
  EXPECT_FALSE(std::filesystem::exists(dir));  // removed with the process
}

}  // namespace
}  // namespace kforge
