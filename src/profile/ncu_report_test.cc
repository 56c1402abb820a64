#include "profile/ncu_report.h"

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::profile {
namespace {

// The details page as `ncu --csv --page details --print-units base --print-rule-details` writes it:
// one row per metric, rule rows with the rule columns filled; a kernel name with commas in it.
const char* kDetails = R"csv(==PROF== Connected to process 4242
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value","Rule Name","Rule Type","Rule Description","Estimated Speedup Type","Estimated Speedup"
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Throughput","%","90.00","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","nsecond","300,000","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Compute (SM) Throughput","%","20.00","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Memory Throughput","%","90.00","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Memory Workload Analysis","Memory Throughput","byte/second","3,000,000,000,000","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Occupancy","Block Limit Registers","block","8","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Occupancy","Block Limit Warps","block","8","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Occupancy","Block Limit Shared Mem","block","3","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Occupancy","Achieved Occupancy","%","40.00","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Occupancy","Theoretical Occupancy","%","37.50","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Launch Statistics","Registers Per Thread","register/thread","32","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Launch Statistics","Static Shared Memory Per Block","byte","16,384","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Launch Statistics","Dynamic Shared Memory Per Block","byte","0","","","","",""
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Occupancy","","","","AchievedOccupancy","OPT","The difference between calculated theoretical (37.5%) and measured achieved occupancy (40.0%), ""quoted"" text.","global","3.5"
"0","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","Launch Statistics","","","","LaunchConfiguration","OPT","Shared memory limits occupancy to 3 blocks per SM.","local","25.0"
"1","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","GPU Speed Of Light Throughput","DRAM Throughput","%","60.00","","","","",""
"1","4242","python3","host","void scale<float, 4>(float *, int)","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","nsecond","100,000","","","","",""
"2","4242","python3","host","tiny_kernel","1","7","(32, 1, 1)","(1, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","usecond","2.5","","","","",""
)csv";

TEST(NcuDetails, ParsesMetricsAndRulesPerLaunch) {
  auto launches = parse_ncu_csv(kDetails);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].kernel, "void scale<float, 4>(float *, int)");
  EXPECT_EQ(launches[0].block, "(256, 1, 1)");
  EXPECT_EQ(launches[0].number("Duration"), 300000.0);
  // "Memory Throughput" appears as % (SOL) and as byte/second (memory workload): the unit picks one.
  EXPECT_EQ(launches[0].number("Memory Throughput", "%"), 90.0);
  EXPECT_EQ(launches[0].number("Memory Throughput", "byte/second"), 3e12);
  ASSERT_EQ(launches[0].rules.size(), 2u);
  EXPECT_EQ(launches[0].rules[0].name, "AchievedOccupancy");
  EXPECT_NE(launches[0].rules[0].description.find("\"quoted\""), std::string::npos);
  EXPECT_EQ(launches[0].rules[1].estimated_speedup_pct, 25.0);
}

TEST(NcuDetails, SummaryGroupsLaunchesAndDividesByCalls) {
  auto kernels = summarize_kernels(parse_ncu_csv(kDetails), 2);
  ASSERT_EQ(kernels.size(), 2u);
  const KernelProfile& k = kernels[0];  // the longest first
  EXPECT_EQ(k.name, "void scale<float, 4>(float *, int)");
  EXPECT_EQ(k.launches, 1);                  // 2 launches over 2 calls
  EXPECT_DOUBLE_EQ(k.duration_us, 200.0);    // (300 + 100) µs over 2 calls
  EXPECT_DOUBLE_EQ(*k.dram_pct, 82.5);       // (90*300 + 60*100) / 400: weighted by duration
  EXPECT_DOUBLE_EQ(*k.sm_pct, 20.0);         // only the first launch has it
  EXPECT_EQ(k.occupancy_limiter, "shared memory");
  EXPECT_DOUBLE_EQ(*k.registers_per_thread, 32);
  EXPECT_DOUBLE_EQ(*k.shared_bytes_per_block, 16384);
  ASSERT_EQ(k.rules.size(), 2u);
  EXPECT_EQ(k.rules[0].name, "AchievedOccupancy");  // a whole-kernel estimate before a larger local one
  EXPECT_EQ(k.rules[0].speedup_scope, "global");
  EXPECT_DOUBLE_EQ(kernels[1].duration_us, 1.25);      // 2.5 µs in one of 2 calls
  EXPECT_FALSE(kernels[1].dram_pct.has_value());
}

// The raw page: metric names as columns, a units row, one row per launch.
const char* kRaw = R"csv("ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","gpu__time_duration.sum","dram__throughput.avg.pct_of_peak_sustained_elapsed","sm__throughput.avg.pct_of_peak_sustained_elapsed","smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","smsp__average_warps_issue_stalled_not_issued_per_issue_active.ratio","launch__occupancy_limit_registers","launch__occupancy_limit_warps"
"","","","","","","","","","","","nsecond","%","%","ratio","ratio","ratio","block","block"
"0","1","python3","h","gemm_kernel","1","7","(128, 1, 1)","(64, 64, 1)","0","9.0","1,000,000","12.5","95.1","1.5","4.25","9.9","2","16"
)csv";

TEST(NcuRaw, ParsesColumnsWithUnitsAndStalls) {
  auto launches = parse_ncu_csv(kRaw);
  ASSERT_EQ(launches.size(), 1u);
  auto kernels = summarize_kernels(launches, 1);
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_DOUBLE_EQ(kernels[0].duration_us, 1000.0);
  EXPECT_DOUBLE_EQ(*kernels[0].dram_pct, 12.5);
  EXPECT_DOUBLE_EQ(*kernels[0].sm_pct, 95.1);
  EXPECT_EQ(kernels[0].occupancy_limiter, "registers");
  ASSERT_EQ(kernels[0].stalls.size(), 2u);  // "not_issued" is not a stall reason
  EXPECT_EQ(kernels[0].stalls[0].reason, "barrier");
  EXPECT_DOUBLE_EQ(kernels[0].stalls[0].cycles_per_issue, 4.25);
}

TEST(NcuCsv, RejectsTextThatIsNotAnExport) {
  EXPECT_THROW(parse_ncu_csv("==PROF== Disconnected\nhello,world\n"), InputError);
}

TEST(NcuNames, ShortNamesDropArgumentsTemplatesAndNamespaces) {
  EXPECT_EQ(short_kernel_name("void scale<float, 4>(float *, int)"), "scale");
  EXPECT_EQ(short_kernel_name("void at::native::(anonymous namespace)::softmax_warp_forward<float, float, float, 10, "
                              "false, false>(float *, const float *, int, int, int, const bool *, int, bool)"),
            "softmax_warp_forward");
  EXPECT_EQ(short_kernel_name("triton_poi_fused_relu_0"), "triton_poi_fused_relu_0");
  EXPECT_EQ(short_kernel_name("void Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>(Params)"),
            "Kernel2<cutlass_80_simt_sgemm_256x128_8x4_nn_align1>");
  EXPECT_EQ(short_kernel_name("void unnamed>::cunn_SoftMaxForwardReg<float, float, float, unnamed>::SoftMaxForwardEpilogue, "
                              "long, 8>(T3 *, const T1 *, T5)"),
            "cunn_SoftMaxForwardReg");
}

}  // namespace
}  // namespace kforge::profile
