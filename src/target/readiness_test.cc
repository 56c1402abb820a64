#include "target/readiness.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "target/machine_probe.h"
#include "util/errors.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

Target target_with(const std::string& device, const std::string& readiness_table) {
  char t[] = "/tmp/kforge-readiness-XXXXXX";
  fs::path dir = fs::path(mkdtemp(t)) / "chip";
  fs::create_directories(dir);
  std::ofstream(dir / "target.toml") << "name = \"chip\"\nlanguage = \"cpp\"\ndevice = \"" << device << "\"\n"
                                     << readiness_table;
  return load_target(dir);
}

MachineFacts ready_cpu_machine() {
  MachineFacts f;
  f.python_modules = {"triton"};
  f.tools = {"g++"};
  return f;
}

TEST(Readiness, ReadsTheTable) {
  Target t = target_with("cuda", "[readiness]\npython_modules = [\"triton\"]\ntools = [\"g++\"]\ncompile_only = true\nhint = \"see notes.md\"\n");
  ReadinessNeeds n = readiness_needs(t);
  EXPECT_EQ(n.python_modules, std::vector<std::string>{"triton"});
  EXPECT_EQ(n.tools, std::vector<std::string>{"g++"});
  EXPECT_TRUE(n.compile_only);
  EXPECT_EQ(n.hint, "see notes.md");
  EXPECT_TRUE(readiness_needs(target_with("cpu", "")).python_modules.empty());
  EXPECT_THROW(readiness_needs(target_with("cpu", "[readiness]\ntools = \"g++\"\n")), InputError);
  EXPECT_THROW(readiness_needs(target_with("cpu", "[readiness]\ncompile_only = 1\n")), InputError);
}

TEST(Readiness, CpuTargetRunsWhereItsToolsAre) {
  Target t = target_with("cpu", "[readiness]\ntools = [\"g++\"]\n");
  EXPECT_EQ(target_readiness(t, readiness_needs(t), ready_cpu_machine()).level, Readiness::kRunnable);
  MachineFacts no_compiler = ready_cpu_machine();
  no_compiler.tools.clear();
  TargetReadiness r = target_readiness(t, readiness_needs(t), no_compiler);
  EXPECT_EQ(r.level, Readiness::kNotReady);
  ASSERT_EQ(r.problems.size(), 1u);
  EXPECT_NE(r.problems[0].find("g++ is not on PATH"), std::string::npos) << r.problems[0];
}

TEST(Readiness, GpuTargetWithoutAGpu) {
  Target compile_only = target_with("cuda", "[readiness]\ncompile_only = true\n");
  Target gpu_only = target_with("cuda", "");
  MachineFacts no_gpu = ready_cpu_machine();
  EXPECT_EQ(target_readiness(compile_only, readiness_needs(compile_only), no_gpu).level, Readiness::kCompileOnly);
  EXPECT_EQ(target_readiness(gpu_only, readiness_needs(gpu_only), no_gpu).level, Readiness::kNeedsHardware);
  MachineFacts gpu = no_gpu;
  gpu.has_cuda_device = true;
  EXPECT_EQ(target_readiness(gpu_only, readiness_needs(gpu_only), gpu).level, Readiness::kRunnable);
}

TEST(Readiness, MissingSoftwareComesBeforeMissingHardware) {
  Target t = target_with("cuda", "[readiness]\npython_modules = [\"triton\"]\ncompile_only = true\n");
  MachineFacts f;
  f.torch_problem = "ModuleNotFoundError: No module named 'torch'";
  TargetReadiness r = target_readiness(t, readiness_needs(t), f);
  EXPECT_EQ(r.level, Readiness::kNotReady);
  ASSERT_EQ(r.problems.size(), 2u);  // torch and triton; the GPU only once they are there
  EXPECT_NE(r.problems[0].find("cannot import torch"), std::string::npos);
  EXPECT_NE(r.problems[1].find("pip install triton"), std::string::npos);
}

TEST(MachineProbe, ABrokenInterpreterIsAFactNotAnError) {
  MachineProbe p = probe_machine("/bin/false", {"triton"}, {"sh", "no-such-tool-kforge"});
  EXPECT_FALSE(p.facts.torch_problem.empty());
  EXPECT_TRUE(p.details.contains("interpreter_error"));
  EXPECT_TRUE(p.facts.tools.count("sh"));
  EXPECT_FALSE(p.facts.tools.count("no-such-tool-kforge"));
  EXPECT_TRUE(p.facts.python_modules.empty());
}

TEST(MachineProbe, AnInterpreterWithoutTorch) {
  if (find_on_path("python3").empty()) GTEST_SKIP() << "no python3 on PATH";
  MachineProbe p = probe_machine("/usr/bin/python3", {"json", "no_such_module_kforge"}, {});
  ASSERT_FALSE(p.details.contains("interpreter_error")) << p.details.dump();
  EXPECT_TRUE(p.facts.python_modules.count("json"));
  EXPECT_FALSE(p.facts.python_modules.count("no_such_module_kforge"));
  if (p.details.contains("torch")) GTEST_SKIP() << "the system python3 has torch; nothing more to check";
  EXPECT_NE(p.facts.torch_problem.find("torch"), std::string::npos) << p.facts.torch_problem;
}

}  // namespace
}  // namespace kforge
