#include "util/file_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

namespace kforge {
namespace {

namespace fs = std::filesystem;

class FileTreeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // On a tmpfs where there is one: removing a folder costs a disk ~1.5 ms (30 s for this test).
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    root = base / ("kforge-tree-test-" + std::to_string(getpid()));
    fs::create_directories(root);
  }
  void TearDown() override { remove_tree(root); }
  fs::path root;
};

// `depth` nested folders under `top` made with descriptors (the path of the deepest is far past
// PATH_MAX), with a file of `bytes` at the bottom.
void bury(const fs::path& top, int depth, int bytes) {
  fs::create_directories(top);
  int dir = open(top.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(dir, 0);
  for (int i = 0; i < depth; ++i) {
    ASSERT_EQ(mkdirat(dir, "d", 0700), 0);
    int next = openat(dir, "d", O_RDONLY | O_DIRECTORY);
    ASSERT_GE(next, 0);
    close(dir);
    dir = next;
  }
  int fd = openat(dir, "buried", O_WRONLY | O_CREAT, 0600);
  ASSERT_GE(fd, 0);
  std::string block(bytes, 'x');
  ASSERT_EQ(write(fd, block.data(), block.size()), static_cast<ssize_t>(block.size()));
  close(fd);
  close(dir);
}

TEST_F(FileTreeTest, TwentyOneThousandNestedFoldersAreMeasuredAndRemoved) {
  const fs::path deep = root / "kforge-eval-1-deep";
  bury(deep, 21000, 4096);
  TreeSize size = measure_tree(deep);
  EXPECT_TRUE(size.complete);
  EXPECT_EQ(size.bytes, 4096u);
  EXPECT_EQ(size.entries, 21001u);
  std::error_code ec;
  fs::remove_all(deep, ec);  // what kforge used before: it gives up on paths past PATH_MAX
  EXPECT_TRUE(fs::exists(deep)) << "std::filesystem::remove_all managed after all: the test proves nothing";
  EXPECT_TRUE(remove_tree(deep));
  EXPECT_FALSE(fs::exists(deep));
}

TEST_F(FileTreeTest, UnreadableFoldersLinksAndWideFoldersAreHandled) {
  const fs::path tree = root / "tree";
  fs::create_directories(tree / "locked" / "inner");
  std::ofstream(tree / "locked" / "inner" / "f") << "12345";
  for (int i = 0; i < 500; ++i) std::ofstream(tree / ("wide-" + std::to_string(i))) << "ab";
  const fs::path outside = root / "outside";
  fs::create_directories(outside);
  std::ofstream(outside / "kept") << "not under the tree";
  fs::create_directory_symlink(outside, tree / "link");
  ASSERT_EQ(chmod((tree / "locked").c_str(), 0), 0);
  TreeSize size = measure_tree(tree);
  EXPECT_EQ(size.bytes, 5u + 500 * 2);
  EXPECT_EQ(size.entries, 1u + 1 + 1 + 500 + 1);  // locked, inner, f, the wide files, the link
  TreeSize capped = measure_tree(tree, 100);
  EXPECT_FALSE(capped.complete);
  EXPECT_GT(capped.entries, 100u);
  EXPECT_TRUE(remove_tree(tree));
  EXPECT_FALSE(fs::exists(tree));
  EXPECT_TRUE(fs::exists(outside / "kept")) << "the link was followed";
  EXPECT_TRUE(remove_tree(root / "never-there"));
}

}  // namespace
}  // namespace kforge
