#include "bench/ray_executor.h"

#include <gtest/gtest.h>

namespace kforge::bench {
namespace {

TEST(RayResources, ATimingHoldsAWholeDeviceAndChecksShareOne) {
  auto cpu_timing = ray_resources("cpu", true);
  EXPECT_EQ(cpu_timing["resources"]["kforge_cpu"], 1.0);
  EXPECT_EQ(cpu_timing["num_gpus"], 0);
  auto cpu_check = ray_resources("cpu", false);
  EXPECT_LT(cpu_check["resources"]["kforge_cpu"].get<double>(), 1.0);
  EXPECT_GT(cpu_check["resources"]["kforge_cpu"].get<double>(), 0.0);

  auto gpu_timing = ray_resources("cuda", true);
  EXPECT_EQ(gpu_timing["num_gpus"], 1.0);
  EXPECT_TRUE(gpu_timing["resources"].empty());
  auto gpu_check = ray_resources("cuda", false);
  EXPECT_LT(gpu_check["num_gpus"].get<double>(), 1.0);
  EXPECT_GT(gpu_check["num_gpus"].get<double>(), 0.0);
  EXPECT_EQ(gpu_check["num_cpus"], 1);
}

TEST(BridgeEnvironment, KeepsNoCredential) {
  auto env = bridge_environment({{"PATH", "/usr/bin"},
                                 {"OPENAI_API_KEY", "sk-1"},
                                 {"ANTHROPIC_API_KEY", "sk-2"},
                                 {"HF_TOKEN", "t"},
                                 {"AWS_SECRET_ACCESS_KEY", "s"},
                                 {"RAY_TMPDIR", "/tmp/r"},
                                 {"RAY_AUTH_TOKEN_PATH", "/etc/ray/token"},
                                 {"CUDA_VISIBLE_DEVICES", "0"},
                                 {"KFORGE_CACHE_DIR", "/c"}});
  EXPECT_EQ(env, (std::map<std::string, std::string>{
                     {"PATH", "/usr/bin"}, {"RAY_TMPDIR", "/tmp/r"}, {"RAY_AUTH_TOKEN_PATH", "/etc/ray/token"},
                     {"CUDA_VISIBLE_DEVICES", "0"}, {"KFORGE_CACHE_DIR", "/c"}}));
}

}  // namespace
}  // namespace kforge::bench
