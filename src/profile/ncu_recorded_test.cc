// The parser and the analysis on Nsight Compute exports recorded on an H100 (testdata/README.md):
// the bundled problems at GPU sizes, candidate and reference, each profiled over two calls.
#include <gtest/gtest.h>

#include "profile/analysis.h"
#include "profile/ncu_report.h"
#include "util/files.h"

namespace kforge::profile {
namespace {

using json = nlohmann::json;

std::string testdata(const std::string& name) {
  return read_file(std::string(KFORGE_SOURCE_DIR) + "/src/profile/testdata/" + name);
}

// Details page with the raw page's metrics added by launch ID, as `kforge profile` reads a report.
std::vector<KernelProfile> recorded(const std::string& name) {
  auto launches = parse_ncu_details(testdata(name + ".details.csv"));
  auto raw = parse_ncu_raw(testdata(name + ".raw.csv"));
  EXPECT_EQ(launches.size(), raw.size());
  for (std::size_t i = 0; i < launches.size() && i < raw.size(); ++i) {
    EXPECT_EQ(launches[i].id, raw[i].id);
    launches[i].metrics.insert(launches[i].metrics.end(), raw[i].metrics.begin(), raw[i].metrics.end());
  }
  return summarize_kernels(launches, 2);
}

void expect_percentages_in_range(const KernelProfile& k) {
  for (const auto& v : {k.dram_pct, k.l2_pct, k.l1_pct, k.sm_pct, k.memory_pct, k.achieved_occupancy_pct,
                        k.theoretical_occupancy_pct}) {
    ASSERT_TRUE(v.has_value()) << k.name;
    EXPECT_GE(*v, 0) << k.name;
    EXPECT_LE(*v, 100) << k.name;
  }
}

TEST(NcuRecorded, ElementwiseCandidateStreamsAtTheDramRoof) {
  auto kernels = recorded("cuda-01_relu");
  ASSERT_EQ(kernels.size(), 1u);
  const KernelProfile& k = kernels[0];
  EXPECT_EQ(k.name, "relu");
  EXPECT_EQ(k.launches, 1);
  EXPECT_NEAR(k.duration_us, (88.672 + 88.576) / 2, 1e-6);  // ns in the export, µs per call here
  EXPECT_NEAR(*k.dram_pct, 83.76, 0.1);
  expect_percentages_in_range(k);
  EXPECT_EQ(k.occupancy_limiter, "none");  // 100 % theoretical occupancy
  EXPECT_EQ(*k.registers_per_thread, 32);
  EXPECT_EQ(*k.shared_bytes_per_block, 0);
  EXPECT_EQ(k.block, "(256, 1, 1)");
  ASSERT_FALSE(k.stalls.empty());
  EXPECT_EQ(k.stalls[0].reason, "long_scoreboard");  // waiting on global memory
  EXPECT_GT(k.stalls[0].cycles_per_issue, 200);
  ASSERT_FALSE(k.rules.empty());
  EXPECT_EQ(k.rules[0].name, "CPIStall");  // the whole-kernel estimate ranks first
  EXPECT_EQ(k.rules[0].speedup_scope, "global");
}

TEST(NcuRecorded, LibraryGemmIsComputeBound) {
  auto kernels = recorded("05_matmul-reference");
  ASSERT_EQ(kernels.size(), 1u);
  const KernelProfile& k = kernels[0];
  EXPECT_EQ(short_kernel_name(k.name), "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>");
  expect_percentages_in_range(k);
  EXPECT_GT(*k.sm_pct, 80);
  EXPECT_LT(*k.dram_pct, 10);
  EXPECT_EQ(*k.registers_per_thread, 202);
  EXPECT_EQ(*k.shared_bytes_per_block, 49152);
  EXPECT_EQ(k.occupancy_limiter, "registers and shared memory");  // one block per SM by either
  json side = {{"ncu", {{"kernels", json::array({to_json(k)})}}}};
  json an = analyze(side, json::object());
  EXPECT_EQ(an["bound"], "compute");
  EXPECT_EQ(an["peak_of"], "SM compute");
}

TEST(NcuRecorded, TiledMatmulCandidateIsHeldBySharedMemoryAndItsTail) {
  auto kernels = recorded("cuda-05_matmul");
  ASSERT_EQ(kernels.size(), 1u);
  const KernelProfile& k = kernels[0];
  expect_percentages_in_range(k);
  EXPECT_GT(*k.l1_pct, *k.sm_pct);  // L1/shared is the busiest unit
  EXPECT_EQ(k.occupancy_limiter, "registers");
  EXPECT_EQ(k.stalls[0].reason, "short_scoreboard");
  json side = {{"ncu", {{"kernels", json::array({to_json(k)})}}}};
  json an = analyze(side, json::object());
  EXPECT_EQ(an["bound"], "memory");
  EXPECT_EQ(an["peak_of"], "L1/shared bandwidth");
  ASSERT_GE(an["limiters"].size(), 2u);
  EXPECT_NE(an["limiters"][1]["text"].get<std::string>().find("ncu LaunchConfiguration: est. 50% speedup (whole kernel)"),
            std::string::npos);
}

TEST(NcuRecorded, EveryRecordedKernelHasFiguresInRange) {
  for (const char* name : {"cuda-01_relu", "05_matmul-reference", "cuda-05_matmul", "03_softmax-reference",
                           "triton-07_layernorm"}) {
    auto kernels = recorded(name);
    ASSERT_FALSE(kernels.empty()) << name;
    for (const auto& k : kernels) {
      expect_percentages_in_range(k);
      EXPECT_GT(k.duration_us, 50) << name;  // the GPU sizes keep every kernel past 50 µs
      EXPECT_FALSE(k.stalls.empty()) << name;
    }
  }
}

}  // namespace
}  // namespace kforge::profile
