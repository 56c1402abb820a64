// Every request kind (generate, fix, a later round, analyse) of the bundled prompts states the same
// facts, and states them as the target file, the verdict's options and the measured peaks say.
#include "loop/request_facts.h"

#include <fstream>

#include <gtest/gtest.h>

#include "agent/prompt_renderer.h"
#include "target/target.h"

namespace kforge::loop {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const fs::path kSource = KFORGE_SOURCE_DIR;

json fixture(const std::string& name) {
  std::ifstream in(kSource / "src/loop/testdata" / name);
  return json::parse(in);
}

EvalOptions options(const std::string& target, const std::string& device) {
  EvalOptions o;
  o.target = load_target(kSource / "targets" / target);
  o.device = device;
  return o;
}

// The context the loop gives its templates (the parts these requests use), with the facts.
json context(const EvalOptions& o, const json& baseline) {
  json ctx = {{"problem_name", "76_Gemm_Add_ReLU"},
              {"target", {{"name", o.target.name}, {"description", o.target.description}, {"language", o.target.language}}},
              {"reference", "class Model(nn.Module): ..."},
              {"shapes", "- forward input 0: float32 tensor [1024, 8192]\n"},
              {"notes", "NOTES"},
              {"example", {{"reference", "REF"}, {"candidate", "CAND"}}},
              {"history", json::array({{{"step", "r0.s0.a0"}, {"verdict", "kept (first correct)"}, {"vs_eager", "0.91x"},
                                        {"vs_compile", "-"}, {"vs_best", "-"}, {"idea", "hand SGEMM"}}})},
              {"has_history", true},
              {"round", 1},
              {"best", {{"step", "r0.s0.a0"}, {"source", "class ModelNew: ..."}, {"show_source", true}, {"vs_eager", "0.91x"}}},
              {"recommendations", json::array()},
              {"candidate", {{"step", "r0.s0.a0"}, {"source", "class ModelNew: ..."}}},
              {"timing", {{"threads", 1}, {"candidate", {{"median_ms", 0.45}, {"p25_ms", 0.44}, {"p75_ms", 0.46}}}}},
              {"speedup_vs_eager", "0.91x"},
              {"feedback", "wrong result"},
              {"attempt", 1},
              {"max_attempts", 3}};
  ctx.update(request_facts(o, baseline));
  return ctx;
}

// Each request as the loop sends it: its messages' text, joined.
std::map<std::string, std::string> requests(const json& ctx) {
  auto lib = agent::PromptLibrary::load(kSource / "prompts");
  const std::string system = lib.render("generate.system", ctx), first = lib.render("generate.user", ctx);
  return {{"generate", system + first},
          {"fix", system + first + "REPLY" + lib.render("fix.user", ctx)},
          {"round", system + lib.render("generate.round", ctx)},
          {"analyse", lib.render("analyze.system", ctx) + lib.render("analyze.user", ctx)}};
}

void expect_all(const std::map<std::string, std::string>& texts, const std::vector<std::string>& present,
                const std::vector<std::string>& absent = {}) {
  for (const auto& [kind, text] : texts) {
    for (const auto& p : present) EXPECT_NE(text.find(p), std::string::npos) << kind << " lacks \"" << p << "\"\n" << text;
    for (const auto& a : absent) EXPECT_EQ(text.find(a), std::string::npos) << kind << " has \"" << a << "\"\n" << text;
  }
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

TEST(RequestFacts, CudaRequestsStateThePolicyTheDeviceAndTheBaselines) {
  const EvalOptions o = options("cuda", "cuda");
  ASSERT_FALSE(o.target.allowed_torch_calls.empty());
  const auto texts = requests(context(o, fixture("baseline_h200.json")));
  expect_all(texts,
             {// the library-call policy, as target.toml lists it and the verdict applies it
              "allows these PyTorch library calls: " + joined(o.target.allowed_torch_calls),
              "whose PyTorch calls cover the reference's whole main computation (here: matmul, relu)",
              "your own kernels must carry the work", "allowed library calls is measured and reported",
              // how the reference's weights reach the candidate (roles/candidate.py's copy by name and shape)
              "whose name and shape match one of the reference's is overwritten", "static check `file_io`",
              // tolerance and precision, with the audit's constants
              "atol = rtol = 0.0001 for float32 outputs", "Precision: `strict`", "no TF32, fp16 or bf16",
              "at most 16 x the fp32 reference's own error plus 8 ulp", "3xTF32",
              // the device as measured
              "NVIDIA H200 (compute capability 9.0), 132 SMs, 139.8 GiB memory, 60 MiB L2",
              "Measured bandwidth: 4658 GB/s", "float32 50.6 TFLOP/s", "float16 721 TFLOP/s", "bfloat16 705 TFLOP/s",
              // the baselines with their spread, and the bound
              "| PyTorch eager | 0.4123 ms | 0.4101 ms | 0.4188 ms | 2% |",
              "| torch.compile | 0.3871 ms | 0.385 ms | 0.3902 ms | 1% |",
              "Speed of light: 0.3395 ms (compute-bound: 17.18 GFLOP at 50.6 TFLOP/s, 50.3 MB at 4658 GB/s); eager runs at 82.3% of it"},
             // a GPU's timings are not a CPU thread count's
             {"H100", "torch only to allocate outputs", "80 GB", "3.0 TB/s", "Measurements of the best ("});
}

// The device section reads as written text: lists end with a full stop, not a dangling separator, and
// the lines of what a GPU lacks (instruction sets, caches) leave no blank lines behind.
TEST(RequestFacts, TheDeviceSectionHasNoDanglingSeparatorsOrBlankLines) {
  for (const char* target : {"cuda", "cpu"}) {
    const EvalOptions o = options(target, target);
    const auto texts = requests(context(o, fixture(std::string(target) == "cuda" ? "baseline_h200.json" : "baseline_cpu.json")));
    for (const auto& [kind, text] : texts) {
      const auto begin = text.find("## The device");
      const auto end = text.find("## What to beat");
      ASSERT_NE(begin, std::string::npos) << kind;
      ASSERT_NE(end, std::string::npos) << kind;
      const std::string section = text.substr(begin, end - begin);
      EXPECT_EQ(section.find("; \n"), std::string::npos) << target << " " << kind << "\n" << section;
      EXPECT_EQ(section.find(";\n"), std::string::npos) << target << " " << kind << "\n" << section;
      EXPECT_EQ(section.find("\n\n\n"), std::string::npos) << target << " " << kind << "\n" << section;
    }
  }
}

TEST(RequestFacts, CpuRequestsStateTheMachineWithoutGpuFigures) {
  const EvalOptions o = options("cpu", "cpu");
  json baseline = fixture("baseline_cpu.json");
  baseline["sol"]["route"] = "ROUTE-OF-AN-OLDER-STORE";  // stored before routes needed counted FLOPs
  const auto texts = requests(context(o, baseline));
  expect_all(texts,
             {"allows these PyTorch library calls: " + joined(o.target.allowed_torch_calls), "(here: softmax)",
              "`cpu`: Intel(R) Xeon(R) Processor, 2 threads for the candidate",
              "74.4 GB/s (working set 262 kB); 9.32 GB/s (working set 134 MB)", "float32 167 GFLOP/s",
              "| PyTorch eager | 1.875 ms | 1.8 ms | 2.01 ms | 11% |",
              // no counted FLOPs (a softmax's exp): the bytes alone, no arithmetic rate or route quoted
              "Speed of light: 0.9 ms (memory-bound: 8.39 MB at 9.32 GB/s)"},
             {"SMs", "| torch.compile |", "L2", "0 FLOP at", "ROUTE-OF-AN-OLDER-STORE"});
}

TEST(RequestFacts, CpuRequestsStateTheSoftmaxsExpsBesideItsBytes) {
  const EvalOptions o = options("cpu", "cpu");
  json baseline = fixture("baseline_cpu.json");
  // What sol.py's pointwise model adds for this softmax of 2^20 float32 elements on this CPU.
  baseline["sol"].update(json::parse(R"json({"gemm_ms": 0, "pointwise_ms": 0.1193, "compute_by": "pointwise",
    "compute_ms": 0.1193, "pointwise_flops": 4194304, "transcendentals": 1048576,
    "pointwise": {"by_function": {"exp": 1048576}, "vector_flops_per_s": 1.67e11, "sfu_ops_per_s": null,
                  "sfu_share": 0}})json"));
  expect_all(requests(context(o, baseline)),
             {"Speed of light: 0.9 ms (memory-bound: 8.39 MB at 9.32 GB/s)",
              "Elementwise work: 4.194 MFLOP and 1.05e+06 transcendentals (1.05e+06 exp) take 0.119 ms at 167 "
              "GFLOP/s on the FMA units (transcendentals as FMA polynomials).\n"},
             {"decides", "special function"});
}

TEST(RequestFacts, CpuRequestsStateTheInstructionSetsAndCaches) {
  const EvalOptions o = options("cpu", "cpu");
  json baseline = fixture("baseline_cpu.json");
  expect_all(requests(context(o, baseline)), {}, {"Vector instruction sets", "Caches of one CPU"});
  baseline["device"]["isa"] = {"avx512f", "avx512bw", "avx2", "fma"};
  baseline["device"]["caches"] = {{{"level", 1}, {"type", "Data"}, {"size_bytes", 49152}, {"shared_by", 1}},
                                  {{"level", 1}, {"type", "Instruction"}, {"size_bytes", 65536}, {"shared_by", 1}},
                                  {{"level", 2}, {"type", "Unified"}, {"size_bytes", 2097152}, {"shared_by", 1}},
                                  {{"level", 3}, {"type", "Unified"}, {"size_bytes", 503316480}, {"shared_by", 2}}};
  expect_all(requests(context(o, baseline)),
             {"- Vector instruction sets (`-march=native` compiles for them): avx512f, avx512bw, avx2, fma.\n",
              "- Caches of one CPU: L1d 48 KiB, L1i 64 KiB, L2 2 MiB, L3 480 MiB shared by 2 CPUs.\n"});
}

TEST(RequestFacts, KernelsOnlyAndRelaxedPrecisionChangeWhatIsStated) {
  EvalOptions o = options("cuda", "cuda");
  o.target.allowed_torch_calls.clear();  // what --kernels-only does before the verdict sees the target
  o.precision = "relaxed";
  const auto texts = requests(context(o, fixture("baseline_h200.json")));
  expect_all(texts, {"No PyTorch computation is allowed here", "(here: matmul, relu)", "Precision: `relaxed`",
                     "the float64 audit is reported, not enforced"},
             {"allows these PyTorch library calls", "no TF32, fp16 or bf16"});
}

TEST(RequestFacts, AFailedBaselineIsSaidNotHidden) {
  const EvalOptions o = options("cpu", "cpu");
  const auto texts = requests(context(o, {{"error", "the baseline measurement failed (exit code 1)"}}));
  expect_all(texts, {"The baseline times could not be measured (the baseline measurement failed (exit code 1))",
                     "`cpu`: not measured", "atol = rtol = 1e-4 for float32"},
             {"| PyTorch eager |"});
}

}  // namespace
}  // namespace kforge::loop
