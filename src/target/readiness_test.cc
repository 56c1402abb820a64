#include "target/readiness.h"

#include <set>

#include <gtest/gtest.h>

namespace kforge {
namespace {

// A machine that has exactly the modules, programs and paths it is given.
MachineProbe machine(std::set<std::string> modules, std::set<std::string> programs, std::set<std::string> paths) {
  return {[=](const std::string& m) { return modules.count(m) > 0; },
          [=](const std::string& p) { return programs.count(p) > 0; },
          [=](const std::string& g) { return paths.count(g) ? g : std::string(); }};
}

Target gpu_target(bool compile_only) {
  Target t;
  t.name = "chip";
  t.requirements.python = {"chiplib"};
  t.requirements.commands = {"chipcc"};
  t.requirements.device_nodes = {"/dev/chip0"};
  t.requirements.hardware = "Chip accelerator";
  t.compile_only.mode = compile_only ? CompileOnlyMode::kBuild : CompileOnlyMode::kNone;
  return t;
}

TEST(Readiness, RunnableWhenSoftwareAndHardwareArePresent) {
  auto r = assess_readiness(gpu_target(false), machine({"chiplib"}, {"chipcc"}, {"/dev/chip0"}));
  EXPECT_EQ(r.state, ReadinessState::kRunnable);
  EXPECT_EQ(r.reason, "found Chip accelerator (/dev/chip0), Python module chiplib, chipcc");
}

TEST(Readiness, CompileOnlyWithoutTheHardwareWhenTheTargetCanBuildWithoutIt) {
  auto r = assess_readiness(gpu_target(true), machine({"chiplib"}, {"chipcc"}, {}));
  EXPECT_EQ(r.state, ReadinessState::kCompileOnly);
  EXPECT_NE(r.reason.find("no Chip accelerator here (/dev/chip0 absent)"), std::string::npos) << r.reason;
  EXPECT_STREQ(readiness_label(r.state), "compile-only");
}

TEST(Readiness, NeedsHardwareWhenNothingCanBeCheckedWithoutIt) {
  auto r = assess_readiness(gpu_target(false), machine({"chiplib"}, {"chipcc"}, {}));
  EXPECT_EQ(r.state, ReadinessState::kNeedsHardware);
  EXPECT_STREQ(readiness_label(r.state), "needs hardware");
}

TEST(Readiness, MissingSoftwareIsNamedAndWinsOverHardware) {
  auto r = assess_readiness(gpu_target(true), machine({}, {"chipcc"}, {}));
  EXPECT_EQ(r.state, ReadinessState::kMissingSoftware);
  EXPECT_EQ(r.reason, "missing: Python module chiplib; no Chip accelerator here (/dev/chip0 absent)");
}

TEST(Readiness, TheTargetsNoteExplainsWhatIsNotRunnableOnly) {
  Target t = gpu_target(false);
  t.requirements.note = "chiplib is not installed by default: its wheel is 2 GB";
  auto missing = assess_readiness(t, machine({}, {"chipcc"}, {}));
  EXPECT_EQ(missing.reason, "missing: Python module chiplib; no Chip accelerator here (/dev/chip0 absent); chiplib is "
                            "not installed by default: its wheel is 2 GB");
  auto no_hardware = assess_readiness(t, machine({"chiplib"}, {"chipcc"}, {}));
  EXPECT_EQ(no_hardware.state, ReadinessState::kNeedsHardware);
  EXPECT_NE(no_hardware.reason.find("; chiplib is not installed by default"), std::string::npos) << no_hardware.reason;
  auto runnable = assess_readiness(t, machine({"chiplib"}, {"chipcc"}, {"/dev/chip0"}));
  EXPECT_EQ(runnable.reason.find("not installed by default"), std::string::npos) << runnable.reason;
}

TEST(Readiness, FilesAreGlobsThatMustEachMatch) {
  Target t;
  t.requirements.files = {"/usr/share/vulkan/icd.d/*.json"};
  EXPECT_EQ(assess_readiness(t, machine({}, {}, {})).state, ReadinessState::kMissingSoftware);
  EXPECT_EQ(assess_readiness(t, machine({}, {}, {"/usr/share/vulkan/icd.d/*.json"})).state,
            ReadinessState::kRunnable);
}

TEST(Readiness, ATargetThatNeedsNothingIsRunnable) {
  auto r = assess_readiness(Target{}, machine({}, {}, {}));
  EXPECT_EQ(r.state, ReadinessState::kRunnable);
}

TEST(Readiness, ThisMachineFindsPythonModulesThroughTheInterpreter) {
  Target t;
  t.requirements.python = {"json", "no_such_module_kforge"};
  auto probe = this_machine("python3", {t});
  EXPECT_TRUE(probe.has_python_module("json"));
  EXPECT_FALSE(probe.has_python_module("no_such_module_kforge"));
  EXPECT_TRUE(probe.has_command("sh"));
  EXPECT_FALSE(probe.has_command("no-such-program-kforge"));
  EXPECT_EQ(probe.first_match("/proc/self/stat*"), "/proc/self/stat");
}

}  // namespace
}  // namespace kforge
