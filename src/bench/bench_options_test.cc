#include "bench/bench_options.h"

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::bench {
namespace {

TEST(BenchOptions, RoundTripThroughJson) {
  BenchOptions o;
  o.mode = "llm";
  o.suite = "level1/";
  o.devices = {"cuda:0", "cuda:1"};
  o.jobs = 4;
  o.out_dir = "/tmp/out";
  o.run.target = "cuda";
  o.run.rounds = 3;
  o.run.seed = 42;
  o.executor = "ray";
  o.ray_address = "10.0.0.1:6379";
  BenchOptions back = options_from_json(to_json(o));
  EXPECT_EQ(back.mode, "llm");
  EXPECT_EQ(back.suite, "level1/");
  EXPECT_EQ(back.devices, o.devices);
  EXPECT_EQ(back.jobs, 4);
  EXPECT_EQ(back.out_dir, "/tmp/out");
  EXPECT_EQ(back.run.target, "cuda");
  EXPECT_EQ(back.run.rounds, 3);
  EXPECT_EQ(back.run.seed, 42u);
  EXPECT_EQ(back.executor, "ray");
  EXPECT_EQ(back.ray_address, "10.0.0.1:6379");
  // Benches stored before executors existed ran locally.
  EXPECT_EQ(options_from_json(nlohmann::json::object()).executor, "local");
}

TEST(BenchOptions, Executors) {
  EXPECT_EQ(parse_executor("local"), "local");
  EXPECT_EQ(parse_executor("ray"), "ray");
  EXPECT_THROW(parse_executor("slurm"), InputError);
  EXPECT_THROW(parse_executor(""), InputError);
}

TEST(BenchOptions, DeviceLists) {
  EXPECT_EQ(parse_device_list("cuda:0,cuda:1"), (std::vector<std::string>{"cuda:0", "cuda:1"}));
  EXPECT_EQ(parse_device_list("cpu"), (std::vector<std::string>{"cpu"}));
  EXPECT_THROW(parse_device_list("cuda:0,"), InputError);
  EXPECT_THROW(parse_device_list("gpu0"), InputError);
  EXPECT_THROW(parse_device_list("cuda:1,cuda:1"), InputError);
}

}  // namespace
}  // namespace kforge::bench
