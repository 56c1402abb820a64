// The executor choice shared by `kforge bench` and `kforge model` (cli/executor_flags.h).
#include "cli/executor_flags.h"

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge {
namespace {

Config config_of(std::string_view text) {
  Config c;
  c.table = toml::parse(text);
  return c;
}

TEST(ChooseExecutor, FlagsThenConfigThenStoredThenLocal) {
  std::string executor, address;
  choose_executor({}, Config{}, true, false, executor, address);
  EXPECT_EQ(executor, "local");
  EXPECT_EQ(address, "");

  const Config ray = config_of("[bench]\nexecutor = \"ray\"\nray_address = \"head:6379\"\n");
  executor.clear();
  address.clear();
  choose_executor({}, ray, true, false, executor, address);
  EXPECT_EQ(executor, "ray");
  EXPECT_EQ(address, "head:6379");

  ExecutorFlags flags{"local", ""};
  executor = "ray";
  choose_executor(flags, ray, true, false, executor, address);
  EXPECT_EQ(executor, "local");

  // A stored address stays unless the flag names another.
  executor = "ray";
  address = "stored:1";
  choose_executor({}, ray, true, false, executor, address);
  EXPECT_EQ(address, "stored:1");
  flags = {"", "other:2"};
  choose_executor(flags, ray, true, false, executor, address);
  EXPECT_EQ(address, "other:2");
}

TEST(ChooseExecutor, RayNeedsTheSandboxAndPlacesEvaluationsItself) {
  std::string executor, address;
  ExecutorFlags ray{"ray", ""};
  EXPECT_THROW(choose_executor(ray, Config{}, false, false, executor, address), InputError);
  executor.clear();
  EXPECT_THROW(choose_executor(ray, Config{}, true, true, executor, address), InputError);
  executor.clear();
  // Local: neither matters.
  ExecutorFlags local{"local", ""};
  EXPECT_NO_THROW(choose_executor(local, Config{}, false, true, executor, address));
}

TEST(DefaultLocalJobs, OneOnTheCpuTwoPerGpuAtMostTheCpus) {
  EXPECT_EQ(default_local_jobs({"cpu"}, 16), 1);
  EXPECT_EQ(default_local_jobs({}, 16), 1);
  EXPECT_EQ(default_local_jobs({"cuda"}, 16), 2);
  EXPECT_EQ(default_local_jobs({"cuda:0", "cuda:1"}, 16), 4);
  EXPECT_EQ(default_local_jobs({"cuda:0", "cuda:1"}, 3), 3);
  EXPECT_EQ(default_local_jobs({"cuda"}, 0), 1);
}

}  // namespace
}  // namespace kforge
