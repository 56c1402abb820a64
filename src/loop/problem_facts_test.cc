#include "loop/problem_facts.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <unistd.h>

namespace kforge::loop {

using json = nlohmann::json;

TEST(ProblemFacts, ShapesListInputsArgumentsAndOutputs) {
  json d = json::parse(R"({
    "inputs": [{"kind": "tensor", "shape": [64, 4096], "dtype": "float32"}, {"kind": "float", "value": 0.5}],
    "init_inputs": [{"kind": "int", "value": 1024}],
    "outputs": [{"kind": "tuple", "items": [{"kind": "tensor", "shape": [64], "dtype": "float16"}]}]})");
  std::string text = shapes_text(d);
  EXPECT_NE(text.find("- forward input 0: float32 tensor [64, 4096]\n"), std::string::npos) << text;
  EXPECT_NE(text.find("- forward input 1: float 0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("- constructor argument 0: int 1024\n"), std::string::npos) << text;
  EXPECT_NE(text.find("- output 0: tuple of (float16 tensor [64])\n"), std::string::npos) << text;
}

TEST(ProblemFacts, SolTextKeepsTheNumbersThatMatter) {
  json doc = json::parse(R"({"sol": {"sol_ms": 0.25, "bound": "memory", "flops": 1000, "bytes": 2097152,
    "peak_flops_per_s": 1e11, "bandwidth_bytes_per_s": 8.4e9, "candidate_pct_of_sol": 41.5, "eager_pct_of_sol": 12.0,
    "peaks": {"bandwidth": [1, 2, 3]}, "peaks_key": {"host": "x"}}})");
  std::string text = sol_text(EvalView::decode(doc));
  EXPECT_NE(text.find("memory-bound, speed of light 0.25 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("2.1 MB at 8.4 GB/s"), std::string::npos) << text;
  EXPECT_NE(text.find("this candidate: 41.5% of speed of light; PyTorch eager: 12%"), std::string::npos) << text;
  EXPECT_EQ(text.find("peaks_key"), std::string::npos);
  EXPECT_EQ(text.find("host"), std::string::npos);
  EXPECT_EQ(sol_text(EvalView::decode(json::object())), "");
}

TEST(ProblemFacts, SolTextNamesTheRouteOfTheBound) {
  json doc = json::parse(R"json({"sol": {"sol_ms": 0.08, "bound": "compute", "flops": 1099511627776, "bytes": 805306368,
    "peak_flops_per_s": 1.4e14, "bandwidth_bytes_per_s": 4.658e12,
    "route": "3xTF32 error-compensated tensor cores (accepted by the float64 audit)",
    "routes": [{"route": "float32 at the measured library rate", "peak_flops_per_s": 5.06e13},
               {"route": "3xTF32 error-compensated tensor cores (accepted by the float64 audit)", "peak_flops_per_s": 1.4e14}]}})json");
  std::string text = sol_text(EvalView::decode(doc));
  EXPECT_NE(text.find("- fastest allowed route: 3xTF32 error-compensated tensor cores (accepted by the float64 audit) "
                      "(others: float32 at the measured library rate: 50.6 TFLOP/s)\n"),
            std::string::npos)
      << text;
  // 2^40 FLOPs: once printed as "0 FLOPs" through a 32-bit integer.
  EXPECT_NE(text.find("(1.1 TFLOP at 140 TFLOP/s; 805 MB at 4658 GB/s)"), std::string::npos) << text;
}

// A softmax on a GPU whose exps outlast its bytes: the prompt names the exps, their rates and that they decide.
TEST(ProblemFacts, SolTextStatesTheTranscendentalsThatDecideTheBound) {
  json doc = json::parse(R"json({"sol": {"sol_ms": 0.5, "bound": "compute", "flops": 0, "bytes": 1048576,
    "peak_flops_per_s": 5.06e13, "bandwidth_bytes_per_s": 4.658e12, "compute_ms": 0.5, "memory_ms": 0.000225,
    "gemm_ms": 0, "pointwise_ms": 0.5, "compute_by": "pointwise", "pointwise_flops": 6.4e9, "transcendentals": 1.6e9,
    "pointwise": {"by_function": {"exp": 1.6e9}, "vector_flops_per_s": 5.06e13, "sfu_ops_per_s": 3.1625e12,
                  "sfu_share": 0.63}}})json");
  std::string text = sol_text(EvalView::decode(doc));
  EXPECT_NE(text.find("- elementwise work: 6.4 GFLOP and 1.6e+09 transcendentals (1.6e+09 exp) take 0.5 ms at "
                      "50.6 TFLOP/s on the FMA units and 3.16e+12 ops/s on the special function units (63% of the "
                      "transcendentals there); this decides the compute bound\n"),
            std::string::npos) << text;
  // Where the bytes decide, the work is stated without the claim.
  doc["sol"]["bound"] = "memory";
  EXPECT_EQ(sol_text(EvalView::decode(doc)).find("decides"), std::string::npos) << sol_text(EvalView::decode(doc));
  // Results stored before the pointwise model carry no such line.
  doc["sol"].erase("pointwise");
  EXPECT_EQ(sol_text(EvalView::decode(doc)).find("elementwise"), std::string::npos) << sol_text(EvalView::decode(doc));
}

// A bound without counted matmul FLOPs names no arithmetic route or rate.
TEST(ProblemFacts, SolTextWithoutCountedFlopsQuotesTheBytesAlone) {
  json doc = json::parse(R"json({"sol": {"sol_ms": 2.771, "bound": "memory", "flops": 0, "bytes": 12884901888,
    "peak_flops_per_s": 1.45e14, "bandwidth_bytes_per_s": 4.649e12,
    "route": "3xTF32 error-compensated tensor cores (accepted by the float64 audit)"}})json");
  std::string text = sol_text(EvalView::decode(doc));
  EXPECT_NE(text.find("memory-bound, speed of light 2.77 ms (no matmul or convolution FLOPs; 12.9 GB at 4649 GB/s)"),
            std::string::npos) << text;
  EXPECT_EQ(text.find("3xTF32"), std::string::npos) << text;
  EXPECT_EQ(text.find("GFLOP/s"), std::string::npos) << text;
}

// A stand-in for the worker's interpreter: `describe` writes `description` to its --json path, or fails.
std::filesystem::path fake_python(const std::filesystem::path& dir, const std::string& name, const std::string& description) {
  const std::filesystem::path script = dir / name;
  std::ofstream(script) << (description.empty() ? "#!/bin/sh\necho 'No module named torch' >&2\nexit 1\n"
                                                 : "#!/bin/sh\nfor a; do [ \"$prev\" = --json ] && out=$a; prev=$a; done\n"
                                                   "[ -n \"$out\" ] || exit 2\nprintf '%s' '" + description + "' > \"$out\"\n");
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  return script;
}

TEST(ProblemFacts, AResumedRunStatesWhatItsFirstPromptsDidOnAnyMachine) {
  const auto dir = std::filesystem::temp_directory_path() / ("kforge-facts-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "problem.py") << "class Model: pass\n";
  const auto works = fake_python(dir, "works", R"({"source": "as it runs", "inputs": [{"kind": "int", "value": 3}]})");
  const auto fails = fake_python(dir, "fails", "");

  ProblemFacts first = describe_problem(works.string(), dir / "problem.py", {}, dir / "run1");
  EXPECT_EQ(first.source, "as it runs");
  EXPECT_NE(first.shapes.find("forward input 0: int 3"), std::string::npos) << first.shapes;
  // Resumed where the interpreter has no torch: the stored description, the same prompts.
  ProblemFacts resumed = describe_problem(fails.string(), dir / "problem.py", {}, dir / "run1");
  EXPECT_EQ(resumed.source, first.source);
  EXPECT_EQ(resumed.shapes, first.shapes);
  EXPECT_TRUE(resumed.note.empty());

  // A run whose shapes could not be read keeps going without them, also once resumed where they could.
  ProblemFacts without = describe_problem(fails.string(), dir / "problem.py", {}, dir / "run2");
  EXPECT_NE(without.note.find("No module named torch"), std::string::npos) << without.note;
  EXPECT_EQ(without.source, "class Model: pass\n");
  ProblemFacts later = describe_problem(works.string(), dir / "problem.py", {}, dir / "run2");
  EXPECT_EQ(later.note, without.note);
  EXPECT_EQ(later.shapes, "");
  std::filesystem::remove_all(dir);
}

}  // namespace kforge::loop
