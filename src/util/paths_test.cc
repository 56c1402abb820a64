// Per-user directories: XDG base directories, and ~/.kforge of earlier versions kept in use.
#include "util/paths.h"

#include <cstdlib>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "util/scoped_env.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;


class PathsTest : public ::testing::Test {
 protected:
  fs::path home = make_temp_dir("kforge-paths-test-");
  ScopedEnv h{"HOME", home.string()};
  ScopedEnv state{"KFORGE_STATE_DIR", std::nullopt};
  ScopedEnv cache{"KFORGE_CACHE_DIR", std::nullopt};
  ScopedEnv data_home{"XDG_DATA_HOME", std::nullopt};
  ScopedEnv config_home{"XDG_CONFIG_HOME", std::nullopt};
  ScopedEnv cache_home{"XDG_CACHE_HOME", std::nullopt};
  ~PathsTest() override { fs::remove_all(home); }
};

TEST_F(PathsTest, FreshHomeUsesXdgDefaults) {
  EXPECT_EQ(state_dir(), home / ".local/share/kforge");
  EXPECT_EQ(cache_dir(), home / ".cache/kforge");
  EXPECT_EQ(user_config_dir(), home / ".config/kforge");
  EXPECT_EQ(user_worker_venv(), home / ".local/share/kforge/venv");
}

TEST_F(PathsTest, XdgVariablesAreHonoured) {
  ScopedEnv d{"XDG_DATA_HOME", (home / "d").string()};
  ScopedEnv c{"XDG_CONFIG_HOME", (home / "c").string()};
  ScopedEnv k{"XDG_CACHE_HOME", (home / "k").string()};
  EXPECT_EQ(state_dir(), home / "d/kforge");
  EXPECT_EQ(user_config_dir(), home / "c/kforge");
  EXPECT_EQ(cache_dir(), home / "k/kforge");
  EXPECT_EQ(user_worker_venv(), home / "d/kforge/venv");
}

TEST_F(PathsTest, RelativeXdgValuesAreIgnored) {
  ScopedEnv d{"XDG_DATA_HOME", "relative/data"};
  EXPECT_EQ(state_dir(), home / ".local/share/kforge");
}

TEST_F(PathsTest, AnExistingDotKforgeKeepsBeingUsed) {
  ScopedEnv d{"XDG_DATA_HOME", (home / "d").string()};
  fs::create_directories(home / ".kforge");
  EXPECT_EQ(state_dir(), home / ".kforge");
  EXPECT_EQ(legacy_dir(), home / ".kforge");
}

TEST_F(PathsTest, ExplicitVariablesWin) {
  fs::create_directories(home / ".kforge");
  ScopedEnv s{"KFORGE_STATE_DIR", (home / "s").string()};
  ScopedEnv c{"KFORGE_CACHE_DIR", (home / "cc").string()};
  EXPECT_EQ(state_dir(), home / "s");
  EXPECT_EQ(cache_dir(), home / "cc");
}

}  // namespace
}  // namespace kforge
