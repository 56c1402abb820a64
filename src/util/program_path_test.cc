#include "util/program_path.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "util/paths.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

TEST(FindProgram, SearchesPathInOrderAndTakesPathsAsTheyAre) {
  const fs::path dir = make_temp_dir("kforge-findprog-");
  fs::create_directories(dir / "a");
  fs::create_directories(dir / "b");
  for (const char* sub : {"a", "b"}) {
    std::ofstream(dir / sub / "tool") << "#!/bin/sh\n";
    fs::permissions(dir / sub / "tool", fs::perms::owner_all);
  }
  std::ofstream(dir / "a" / "plain") << "not executable";
  const std::string path = (dir / "a").string() + "::" + (dir / "b").string();
  EXPECT_EQ(find_program("tool", path), dir / "a" / "tool");
  EXPECT_FALSE(find_program("plain", path).has_value()) << "a file that cannot run is no program";
  EXPECT_FALSE(find_program("missing", path).has_value());
  EXPECT_EQ(find_program((dir / "b" / "tool").string(), ""), dir / "b" / "tool");
  EXPECT_FALSE(find_program("", path).has_value());
  fs::remove_all(dir);
}

TEST(ToolchainPrefix, AToolchainOutsideTheSystemFoldersIsItsPrefixAndNothingBroader) {
  EXPECT_FALSE(toolchain_prefix("/bin/sh").has_value()) << "system compilers are in the sandbox already";
  const fs::path root = make_temp_dir("kforge-toolchain-");  // under /tmp: never bound
  fs::create_directories(root / "bin");
  std::ofstream(root / "bin" / "gcc") << "#!/bin/sh\n";
  EXPECT_FALSE(toolchain_prefix(root / "bin" / "gcc").has_value());
  EXPECT_FALSE(toolchain_prefix("/no/such/compiler").has_value());
  fs::remove_all(root);
  // A toolchain under /opt (as on machines with a newer gcc in /opt/gcc), found through a link.
  const fs::path opt = "/opt/kforge-toolchain-test-" + std::to_string(::getpid());
  std::error_code ec;
  fs::create_directories(opt / "bin", ec);
  if (ec) GTEST_SKIP() << "cannot create " << opt << ": " << ec.message();
  std::ofstream(opt / "bin" / "gcc-13") << "#!/bin/sh\n";
  fs::create_symlink("gcc-13", opt / "bin" / "gcc");
  EXPECT_EQ(toolchain_prefix(opt / "bin" / "gcc"), opt);
  fs::create_directories(opt / "tools");
  std::ofstream(opt / "tools" / "cc") << "#!/bin/sh\n";
  EXPECT_EQ(toolchain_prefix(opt / "tools" / "cc"), opt / "tools") << "not in a bin folder: its own folder";
  fs::remove_all(opt);
}

}  // namespace
}  // namespace kforge
