#include "util/memory_cgroup.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "util/subprocess.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

TEST(MemoryCgroup, AChildJoinsItsCgroupAndItIsRemovedAfterwards) {
  auto group = MemoryCgroup::create(fmt::format("kforge-test-{}", getpid()), 256ull << 20);
  if (!group) GTEST_SKIP() << "no writable memory controller here";
  const fs::path dir = fs::path(group->procs_file()).parent_path();
  ASSERT_TRUE(fs::exists(dir));
  EXPECT_EQ(group->limit_bytes(), 256ull << 20);
  EXPECT_FALSE(group->limit_reached());
  {
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", "echo '{\"ok\":true}' >&3; sleep 5"};
    o.env = {{"PATH", "/usr/bin:/bin"}};
    o.memory_cgroup = std::shared_ptr<MemoryCgroup>(std::move(group));
    auto p = Subprocess::spawn(o);
    ASSERT_NE(p->memory_cgroup(), nullptr);
    std::string line;
    ASSERT_EQ(p->wait_line(std::chrono::steady_clock::now() + std::chrono::seconds(10), &line), WaitOutcome::kReply)
        << p->log_excerpt(2000);
    std::ifstream cgroups(fmt::format("/proc/{}/cgroup", p->pid()));
    std::stringstream text;
    text << cgroups.rdbuf();
    EXPECT_NE(text.str().find(dir.filename().string()), std::string::npos) << text.str();
  }  // killed, then its cgroup goes
  EXPECT_FALSE(fs::exists(dir));
}

TEST(MemoryCgroup, TheCgroupsOfAGoneRunAreRemovedByTheNext) {
  auto own = own_memory_cgroup();
  if (!own || !MemoryCgroup::create(fmt::format("kforge-test-{}", getpid()), 1ull << 30)) GTEST_SKIP() << "no writable memory controller here";
  const fs::path stale = fs::path(own->first) / "kforge-cand-999999999-0";  // no such process
  fs::create_directory(stale);
  auto group = MemoryCgroup::create(fmt::format("kforge-cand-{}-test", getpid()), 1ull << 30);
  ASSERT_TRUE(group);
  EXPECT_FALSE(fs::exists(stale));
}

}  // namespace
}  // namespace kforge
