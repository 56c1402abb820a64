#include "profile/analysis.h"

#include <gtest/gtest.h>

#include "profile/roofline_svg.h"

namespace kforge::profile {
namespace {

using json = nlohmann::json;

// 256 MB moved, no FLOPs counted (an elementwise kernel), on a device measured at 3 TB/s.
json elementwise_sol() {
  return {{"flops", 0}, {"bytes", 256e6}, {"dtype", "float32"}, {"peak_flops_per_s", 50e12},
          {"bandwidth_bytes_per_s", 3e12}, {"sol_ms", 256e6 / 3e12 * 1e3}, {"bound", "memory"}};
}

json ncu_side(double median_ms) {
  return {{"achieved", achieved(median_ms, elementwise_sol())},
          {"torch_profiler", {{"kernels_per_call", 1}, {"wall_us_per_call", 120}, {"device_busy_us_per_call", 100}}},
          {"ncu", {{"kernels", json::array({{{"short_name", "relu_kernel"}, {"duration_us_per_call", 100.0},
                                             {"dram_pct", 88.0}, {"l2_pct", 40.0}, {"l1_pct", 20.0}, {"sm_pct", 15.0},
                                             {"achieved_occupancy_pct", 45.0}, {"theoretical_occupancy_pct", 100.0},
                                             {"occupancy_limiter", "warps"}, {"registers_per_thread", 16},
                                             {"shared_bytes_per_block", 0},
                                             {"stalls", json::array({{{"reason", "long_scoreboard"}, {"cycles_per_issue", 30.0}},
                                                                     {{"reason", "wait"}, {"cycles_per_issue", 10.0}}})},
                                             {"rules", json::array({{{"rule", "SOLBottleneck"}, {"description", "Memory is busy"},
                                                                     {"estimated_speedup_pct", nullptr}}})}}})}}}};
}

TEST(Achieved, FiguresAgainstMeasuredPeaks) {
  json a = achieved(0.1, elementwise_sol());  // 256 MB in 0.1 ms = 2.56 TB/s
  EXPECT_DOUBLE_EQ(a["bytes_per_s"].get<double>(), 2.56e12);
  EXPECT_NEAR(a["pct_of_bandwidth"].get<double>(), 85.333, 1e-3);
  EXPECT_NEAR(a["pct_of_sol"].get<double>(), 85.333, 1e-3);
  EXPECT_FALSE(a.contains("pct_of_peak_flops"));  // no arithmetic counted: no share of a FLOP rate
}

// A softmax-like bound: 0.2 ms of elementwise work on FMA units measured at 50 TFLOP/s, more than
// its bytes take; the compute side is that work as 1e10 FMA-unit FLOPs against that rate.
json softmax_sol() {
  json sol = elementwise_sol();
  sol.update({{"bound", "compute"}, {"compute_by", "pointwise"}, {"compute_ms", 0.2}, {"pointwise_ms", 0.2},
              {"pointwise_flops", 4e9}, {"transcendentals", 1e9}, {"sol_ms", 0.2},
              {"pointwise", {{"by_function", {{"exp", 1e9}}}, {"vector_flops_per_s", 5e13}}}});
  return sol;
}

TEST(Achieved, ElementwiseWorkThatBoundsTheComputeSideIsItsFlopRate) {
  json a = achieved(0.4, softmax_sol());  // half the bound's speed
  EXPECT_DOUBLE_EQ(a["flops_per_s"].get<double>(), 1e10 / 0.4e-3);
  EXPECT_NEAR(a["pct_of_peak_flops"].get<double>(), 50.0, 1e-9);
  EXPECT_TRUE(a.value("flops_are_elementwise", false));
  json side = {{"achieved", a}};
  const json out = analyze(side, softmax_sol());
  EXPECT_EQ(out["bound"], "compute");
  EXPECT_NEAR(out["pct_of_peak"].get<double>(), 50.0, 1e-9);
  EXPECT_NE(out["limiters"][0]["text"].get<std::string>().find(
                "elementwise work of 10 GFLOP per call at the FMA units' rate (its transcendentals included) runs at "
                "25 TFLOP/s: 50.0% of the 50 TFLOP/s float32 vector rate"),
            std::string::npos)
      << out.dump();
}

TEST(Achieved, AMatmulBoundStaysOnItsRoute) {
  json sol = elementwise_sol();
  sol.update({{"flops", 2e12}, {"bound", "compute"}, {"compute_by", "gemm"}, {"pointwise_ms", 0.01},
              {"pointwise", {{"vector_flops_per_s", 5e13}}}});
  json a = achieved(100, sol);
  EXPECT_DOUBLE_EQ(a["flops_per_s"].get<double>(), 2e13);
  EXPECT_NEAR(a["pct_of_peak_flops"].get<double>(), 40.0, 1e-9);
  EXPECT_FALSE(a.contains("flops_are_elementwise"));
}

TEST(Analyze, NcuFiguresMakeTheCallAndNameTheLimiters) {
  json an = analyze(ncu_side(0.1), elementwise_sol());
  EXPECT_EQ(an["bound"], "memory");
  EXPECT_EQ(an["basis"], "ncu");
  EXPECT_DOUBLE_EQ(an["pct_of_peak"].get<double>(), 88.0);
  ASSERT_EQ(an["limiters"].size(), 3u);
  EXPECT_EQ(an["limiters"][0]["what"], "throughput");
  EXPECT_NE(an["limiters"][0]["text"].get<std::string>().find("DRAM bandwidth at 88.0% of peak in `relu_kernel`"),
            std::string::npos);
  // No rule with an estimated speedup: the stall and occupancy come next.
  EXPECT_EQ(an["limiters"][1]["what"], "warp_stall");
  EXPECT_NE(an["limiters"][1]["text"].get<std::string>().find("long_scoreboard: 30.00 cycles"), std::string::npos);
  EXPECT_EQ(an["limiters"][2]["what"], "occupancy");
}

TEST(Analyze, WithoutNcuTheModelDecides) {
  json side = {{"achieved", achieved(0.2, elementwise_sol())},
               {"torch_profiler", {{"kernels_per_call", 0}, {"wall_us_per_call", 200}, {"threads", 4},
                                   {"host_ops", json::array({{{"name", "aten::empty"}, {"cpu_us_per_call", 10.0}}})},
                                   {"host_ops_us_per_call", 10}, {"outside_torch_ops_us_per_call", 190}}}};
  json an = analyze(side, elementwise_sol());
  EXPECT_EQ(an["bound"], "memory");
  EXPECT_EQ(an["basis"], "model");
  EXPECT_NEAR(an["pct_of_peak"].get<double>(), 42.667, 1e-3);
  ASSERT_EQ(an["limiters"].size(), 2u);
  EXPECT_NE(an["limiters"][0]["text"].get<std::string>().find("1280 GB/s: 42.7% of the 3000 GB/s"), std::string::npos);
  EXPECT_NE(an["limiters"][1]["text"].get<std::string>().find("95% of the call (190 µs under torch.profiler) runs outside torch operators"),
            std::string::npos);
  // The reference: one operator takes the call.
  side["torch_profiler"]["host_ops"][0] = {{"name", "aten::relu"}, {"cpu_us_per_call", 180.0}};
  side["torch_profiler"]["host_ops_us_per_call"] = 180;
  side["torch_profiler"]["outside_torch_ops_us_per_call"] = 20;
  an = analyze(side, elementwise_sol());
  EXPECT_NE(an["limiters"][1]["text"].get<std::string>().find("aten::relu takes 90% of the call (180 µs per call under torch.profiler, 4 threads)"),
            std::string::npos);
}

TEST(Analyze, ManyKernelsWithAnIdleGpuIsLaunchOverhead) {
  json side = ncu_side(0.1);
  side["torch_profiler"] = {{"kernels_per_call", 12}, {"wall_us_per_call", 400}, {"device_busy_us_per_call", 100},
                            {"launch_api_us_per_call", 60}};
  side["ncu"]["kernels"][0]["stalls"] = json::array();
  side["ncu"]["kernels"][0]["achieved_occupancy_pct"] = 90.0;
  json an = analyze(side, elementwise_sol());
  ASSERT_EQ(an["limiters"].size(), 2u);
  EXPECT_EQ(an["limiters"][1]["what"], "launch_overhead");
  EXPECT_NE(an["limiters"][1]["text"].get<std::string>().find("busy 25% of the call: 12 kernel launches"), std::string::npos);
}

json document() {
  json doc = {{"problem_name", "01_relu"}, {"target", "cuda"}, {"device_name", "NVIDIA H100"}, {"sol", elementwise_sol()},
              {"sides", {{"candidate", ncu_side(0.1)}, {"reference", ncu_side(0.2)}}}, {"notes", {"a note"}}};
  for (auto& [name, side] : doc["sides"].items()) side["analysis"] = analyze(side, doc["sol"]);
  return doc;
}

TEST(RenderText, CompactSummaryWithNumbersAndUnits) {
  std::string text = render_text(document());
  EXPECT_NE(text.find("Profile of `01_relu` on cuda (NVIDIA H100)"), std::string::npos);
  EXPECT_NE(text.find("Candidate: 0.1 ms per call, 85.3% of speed of light; memory-bound (DRAM bandwidth at 88.0% of peak, Nsight Compute)"), std::string::npos);
  EXPECT_NE(text.find("main kernel `relu_kernel` (100 µs per call under Nsight Compute): DRAM 88.0%"), std::string::npos);
  EXPECT_NE(text.find("limiter 1: DRAM bandwidth"), std::string::npos);
  EXPECT_NE(text.find("Reference (PyTorch eager): 0.2 ms per call"), std::string::npos);
  EXPECT_NE(text.find("Note: a note"), std::string::npos);
}

TEST(RenderText, TheSpeedOfLightStatesTheElementwiseWorkThatDecidesIt) {
  json doc = document();
  EXPECT_NE(render_text(doc).find("for no matmul or convolution FLOPs; 256 MB at 3000 GB/s"), std::string::npos);
  EXPECT_EQ(render_text(doc).find("elementwise work"), std::string::npos);  // a relu: none counted
  // A softmax-like bound: its exps on the FMA units take longer than its bytes.
  doc["sol"].update({{"bound", "compute"}, {"compute_by", "pointwise"}, {"pointwise_ms", 0.2}, {"pointwise_flops", 4e9},
                     {"transcendentals", 1e9}, {"pointwise", {{"by_function", {{"exp", 1e9}}}, {"vector_flops_per_s", 5e13}}}});
  const std::string text = render_text(doc);
  EXPECT_NE(text.find("Speed of light, elementwise work: 4 GFLOP and 1e+09 transcendentals (1e+09 exp) take 0.2 ms at "
                      "50 TFLOP/s on the FMA units (transcendentals as FMA polynomials); this decides the compute bound\n"),
            std::string::npos)
      << text;
}

TEST(RooflineSvg, RoofPointsAndUnitBars) {
  std::string svg = roofline_svg(document());
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("id=\"roof\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"point\" data-side=\"candidate\""), std::string::npos);
  EXPECT_NE(svg.find("class=\"point\" data-side=\"reference (eager)\""), std::string::npos);
  EXPECT_NE(svg.find("data-side=\"candidate\" data-unit=\"DRAM\""), std::string::npos);
  EXPECT_NE(svg.find("placed by bandwidth"), std::string::npos);  // no FLOPs counted for relu
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
}

TEST(RooflineSvg, ASoftmaxSitsOnTheFmaUnitRoofNotTheAxisEdge) {
  json doc = document();
  doc["sol"] = softmax_sol();
  doc["sides"]["candidate"]["achieved"] = achieved(0.4, softmax_sol());
  doc["sides"]["reference"]["achieved"] = achieved(0.8, softmax_sol());
  const std::string svg = roofline_svg(doc);
  EXPECT_EQ(svg.find("placed by bandwidth"), std::string::npos) << svg;
  EXPECT_NE(svg.find("FMA-unit roof (elementwise work) 50 TFLOP/s float32"), std::string::npos) << svg;
  // 1e10 FLOPs over 256 MB: 39.1 FLOP/byte, past the ridge at 50e12 / 3e12 = 16.7 FLOP/byte.
  EXPECT_NE(svg.find("50% of the roof at 39.1 FLOP/byte"), std::string::npos) << svg;
  EXPECT_NE(svg.find("25% of the roof at 39.1 FLOP/byte"), std::string::npos) << svg;
}

TEST(RooflineSvg, WithoutPeaksSaysSo) {
  std::string svg = roofline_svg({{"problem_name", "p"}, {"sides", json::object()}});
  EXPECT_NE(svg.find("No measured peaks"), std::string::npos);
}

}  // namespace
}  // namespace kforge::profile
