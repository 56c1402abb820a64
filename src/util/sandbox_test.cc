#include "util/sandbox.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "util/sandbox_limits.h"
#include "util/subprocess.h"

namespace kforge {
namespace {

bool has_sequence(const std::vector<std::string>& argv, const std::vector<std::string>& seq) {
  return std::search(argv.begin(), argv.end(), seq.begin(), seq.end()) != argv.end();
}

TEST(Sandbox, ShowsOnlyWhatThePolicyNamesAndTheSystemPaths) {
  SandboxPolicy policy;
  policy.read_only = {"/usr/lib"};
  policy.writable = {"/tmp"};
  auto argv = sandboxed_command("/usr/bin/bwrap", policy, {"python3", "-c", "pass"});
  EXPECT_FALSE(has_sequence(argv, {"--ro-bind", "/", "/"})) << "the host's root must not be shown";
  EXPECT_FALSE(has_sequence(argv, {"--ro-bind", "/etc", "/etc"}));
  EXPECT_TRUE(has_sequence(argv, {"--ro-bind", "/usr", "/usr"}));
  EXPECT_TRUE(has_sequence(argv, {"--unshare-net"}));
  EXPECT_TRUE(has_sequence(argv, {"--remount-ro", "/", "--"}));
  EXPECT_EQ(std::vector<std::string>(argv.end() - 3, argv.end()), (std::vector<std::string>{"python3", "-c", "pass"}));
}

TEST(Sandbox, TmpAndShmAreSizeLimited) {
  SandboxPolicy policy;
  policy.tmp_bytes = 12345678;
  policy.shm_bytes = 4096;
  auto argv = sandboxed_command("/usr/bin/bwrap", policy, {"true"});
  EXPECT_TRUE(has_sequence(argv, {"--size", "12345678", "--tmpfs", "/tmp"}));
  EXPECT_TRUE(has_sequence(argv, {"--size", "4096", "--tmpfs", "/dev/shm", "--remount-ro", "/dev"}));
}

TEST(Sandbox, DropsToTheUnprivilegedUidBeforeTheCommand) {
  SandboxPolicy policy;
  policy.drop_to = HostIds{65534, 65534};
  auto argv = sandboxed_command("/usr/bin/bwrap", policy, {"python3"});
  EXPECT_TRUE(has_sequence(argv, {"--", "/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                  "--inh-caps=-all", "--bounding-set=-all", "--", "python3"}));
}

TEST(Sandbox, TheTmpfsHaveAnInodeCountAndTheTasksALimitAsRoot) {
  SandboxPolicy policy;
  policy.drop_to = HostIds{65534, 65534};
  auto argv = sandboxed_command("/usr/bin/bwrap", policy, {"python3"});
  const std::string inodes = std::to_string(kSandboxInodes);
  EXPECT_TRUE(has_sequence(argv, {"--", "/bin/sh", "-c",
                                  "mount -o remount,nr_inodes=" + inodes + " /tmp && mount -o remount,nr_inodes=" +
                                      inodes + " /dev/shm && exec \"$@\"",
                                  "sh", "/usr/bin/prlimit",
                                  "--nproc=" + std::to_string(kSandboxTasks) + ":" + std::to_string(kSandboxTasks),
                                  "--", "/usr/bin/setpriv"}));
}

TEST(Sandbox, InodeAndTaskCountsHoldInsideARealSandbox) {
  if (geteuid() != 0) GTEST_SKIP() << "the counts are set where kforge runs as root";
  auto bwrap = usable_bwrap();
  if (!bwrap) GTEST_SKIP() << "bubblewrap is not usable here";
  SandboxPolicy policy;
  policy.drop_to = sandbox_ids(std::nullopt);
  const std::string past = std::to_string(kSandboxInodes + 1000);
  auto r = run_command(sandboxed_command(*bwrap, policy,
                                         {"/bin/sh", "-c", "cd /tmp && seq 1 " + past +
                                                               " | xargs touch 2>/dev/null; ls | wc -l; "
                                                               "grep 'Max processes' /proc/self/limits"}),
                       std::chrono::seconds(120));
  EXPECT_NE(r.output.find(std::to_string(kSandboxInodes - 1) + "\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Max processes             " + std::to_string(kSandboxTasks)), std::string::npos)
      << r.output;
}

TEST(Sandbox, FoldersOnTheWayToAMountAreMadePassable) {
  // bubblewrap as root makes missing parents mode 0700: the unprivileged uid could not pass them.
  auto root = std::filesystem::temp_directory_path() / ("kforge-sandbox-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(root / "a" / "b");
  SandboxPolicy policy;
  policy.read_only = {root / "a" / "b", "/usr/lib"};
  auto argv = sandboxed_command("/usr/bin/bwrap", policy, {"true"});
  const auto real = std::filesystem::canonical(root);
  EXPECT_TRUE(has_sequence(argv, {"--perms", "0755", "--dir", real.string()}));
  EXPECT_TRUE(has_sequence(argv, {"--perms", "0755", "--dir", (real / "a").string(), "--ro-bind",
                                  (real / "a" / "b").string(), (real / "a" / "b").string()}));
  // Inside /usr (bound from the host) nothing is made.
  EXPECT_FALSE(has_sequence(argv, {"--perms", "0755", "--dir", "/usr"}));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace kforge
