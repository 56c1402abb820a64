#include "target/target.h"

#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

fs::path make_targets(const std::string& name, const std::string& toml) {
  char t[] = "/tmp/kforge-targets-XXXXXX";
  fs::path root = mkdtemp(t);
  fs::create_directories(root / name);
  std::ofstream(root / name / "target.toml") << toml;
  return root;
}

TEST(TargetRegistry, ReadsEveryKey) {
  auto root = make_targets("newchip", R"(
name = "newchip"
description = "a platform added as data"
language = "cpp"
device = "cpu"
compile_timeout_s = 42
[example]
reference = "ref.py"
candidate = "cand.py"
[sandbox]
address_space_gb = 8
devices = ["/dev/dri/renderD*"]
[env]
pass = ["A"]
set = { B = "1" }
[checks]
allowed_torch_calls = ["torch.matmul"]
[worker]
preload = ["chiplib.runtime"]
[requires]
python = ["chiplib"]
commands = ["chipcc"]
files = ["/opt/chip/lib*.so"]
device_nodes = ["/dev/chip*"]
hardware = "Chip accelerator"
[compile_only]
mode = "interpreter"
env = { CHIP_INTERPRET = "1" }
[caches]
CHIP_CACHE_DIR = "chip/kernels"
[device_lock]
exclusive = true
visible_devices_env = "CHIP_VISIBLE_DEVICES"
)");
  auto registry = TargetRegistry::load(root);
  const Target& t = registry.get("newchip");
  EXPECT_EQ(t.description, "a platform added as data");
  EXPECT_EQ(t.compile_timeout_s, 42);
  EXPECT_EQ(t.example_reference, root / "newchip" / "ref.py");
  EXPECT_EQ(t.address_space_gb, 8);
  EXPECT_EQ(t.env_pass, std::vector<std::string>{"A"});
  EXPECT_EQ(t.env_set.at("B"), "1");
  EXPECT_EQ(t.allowed_torch_calls, std::vector<std::string>{"torch.matmul"});
  EXPECT_EQ(t.requirements.python, std::vector<std::string>{"chiplib"});
  EXPECT_EQ(t.requirements.commands, std::vector<std::string>{"chipcc"});
  EXPECT_EQ(t.requirements.files, std::vector<std::string>{"/opt/chip/lib*.so"});
  EXPECT_EQ(t.requirements.device_nodes, std::vector<std::string>{"/dev/chip*"});
  EXPECT_EQ(t.requirements.hardware, "Chip accelerator");
  EXPECT_EQ(t.preload, std::vector<std::string>{"chiplib.runtime"});
  EXPECT_EQ(t.compile_only.mode, CompileOnlyMode::kInterpreter);
  EXPECT_EQ(t.compile_only.env.at("CHIP_INTERPRET"), "1");
  EXPECT_EQ(t.caches.at("CHIP_CACHE_DIR"), "chip/kernels");
  EXPECT_EQ(t.sandbox_devices, std::vector<std::string>{"/dev/dri/renderD*"});
  EXPECT_TRUE(t.device_lock.exclusive);
  EXPECT_EQ(t.device_lock.visible_devices_env, "CHIP_VISIBLE_DEVICES");
}

TEST(TargetRegistry, BadRequirementsAreNamed) {
  const std::string head = "name = \"a\"\nlanguage = \"cpp\"\ndevice = \"cpu\"\n[requires]\n";
  auto error = [&](const std::string& rest) {
    try {
      TargetRegistry::load(make_targets("a", head + rest));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("python = \"wgpu\"\n").find("'python' must be a list of strings"), std::string::npos);
  EXPECT_NE(error("device_nodes = [\"/sys/x\"]\nhardware = \"x\"\n").find("is not under /dev/"), std::string::npos);
  EXPECT_NE(error("device_nodes = [\"/dev/x\"]\n").find("needs requires.hardware"), std::string::npos);
}

// The error a target.toml of `name = "a"` with `rest` appended gets, or "no error".
std::string load_error(const std::string& rest) {
  try {
    TargetRegistry::load(make_targets("a", "name = \"a\"\nlanguage = \"cpp\"\ndevice = \"cpu\"\n" + rest));
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(TargetRegistry, CacheFoldersStayUnderKforgesCacheDirectory) {
  EXPECT_EQ(load_error("[caches]\nCHIP_CACHE_DIR = \"chip\"\n"), "no error");
  EXPECT_NE(load_error("[caches]\nCHIP_CACHE_DIR = \"/var/cache/chip\"\n").find("caches.CHIP_CACHE_DIR = \"/var/cache/chip\" is an absolute path"),
            std::string::npos);
  EXPECT_NE(load_error("[caches]\nCHIP_CACHE_DIR = \"chip/../../home\"\n").find("leaves the cache directory (..)"),
            std::string::npos);
  EXPECT_NE(load_error("[caches]\nCHIP_CACHE_DIR = \"\"\n").find("is empty"), std::string::npos);
  EXPECT_NE(load_error("[caches]\nCHIP_CACHE_DIR = \"a//b\"\n").find("not a plain folder name"), std::string::npos);
  EXPECT_NE(load_error("[caches]\nCHIP_CACHE_DIR = \"build/chip\"\n").find("a folder kforge keeps for itself"),
            std::string::npos);
  // The reference worker writes a target's caches: none may be the builder's precompiled headers.
  EXPECT_NE(load_error("[caches]\nCHIP_CACHE_DIR = \"pch\"\n").find("a folder kforge keeps for itself"),
            std::string::npos);
  EXPECT_NE(load_error("[caches]\nCHIP_CACHE_DIR = 3\n").find("caches.CHIP_CACHE_DIR must be a string"),
            std::string::npos);
  // A cache variable cannot redirect what kforge sets for the worker itself.
  EXPECT_NE(load_error("[caches]\nHOME = \"chip\"\n").find("'HOME' is set by kforge itself"), std::string::npos);
  EXPECT_NE(load_error("[caches]\nKFORGE_BUILD_CACHE = \"chip\"\n").find("set by kforge itself"), std::string::npos);
  EXPECT_NE(load_error("[caches]\n\"chip-dir\" = \"chip\"\n").find("not an environment variable name"),
            std::string::npos);
}

TEST(TargetRegistry, SandboxDevicesComeFromTheAllowlist) {
  EXPECT_EQ(load_error("[sandbox]\ndevices = [\"/dev/nvidia*\", \"/dev/kfd\"]\n"), "no error");
  auto error = load_error("[sandbox]\ndevices = [\"/dev/sda\"]\n");
  EXPECT_NE(error.find("sandbox.devices entry '/dev/sda' is not a GPU device node"), std::string::npos) << error;
  EXPECT_NE(error.find("allowed: /dev/nvidia*, /dev/kfd, /dev/dri/renderD*"), std::string::npos) << error;
  EXPECT_NE(load_error("[sandbox]\ndevices = [\"/dev/*\"]\n").find("is not a GPU device node"), std::string::npos);
}

TEST(TargetRegistry, CompileOnlyModeIsChecked) {
  EXPECT_EQ(load_error(""), "no error");
  EXPECT_EQ(TargetRegistry::load(make_targets("a", "name = \"a\"\nlanguage = \"cpp\"\ndevice = \"cpu\"\n"))
                .get("a").compile_only.mode,
            CompileOnlyMode::kNone);
  EXPECT_NE(load_error("[compile_only]\nmode = \"emulate\"\n").find("compile_only.mode 'emulate' is not one of"),
            std::string::npos);
  EXPECT_NE(load_error("[compile_only]\nmode = \"build\"\nenv = { X = \"1\" }\n").find("interpreter\" only"),
            std::string::npos);
  EXPECT_NE(load_error("[compile_only]\nmode = \"interpreter\"\nenv = { LD_PRELOAD = \"x.so\" }\n")
                .find("'LD_PRELOAD' is set by kforge itself"),
            std::string::npos);
  EXPECT_NE(load_error("[requires]\ncompile_only = true\n").find("[compile_only] mode"), std::string::npos);
}

TEST(TargetRegistry, PreloadsAreModuleNames) {
  EXPECT_EQ(load_error("[worker]\npreload = [\"triton.language\"]\n"), "no error");
  EXPECT_NE(load_error("[worker]\npreload = [\"os; import x\"]\n").find("'os; import x' is not a Python module name"),
            std::string::npos);
  EXPECT_NE(load_error("[worker]\npreload = \"triton\"\n").find("'preload' must be a list of strings"),
            std::string::npos);
}

TEST(TargetRegistry, KernelLoopsAreDottedPythonNames) {
  EXPECT_EQ(load_error("[checks]\nkernel_loops = [\"helion.language.tile\"]\n"), "no error");
  EXPECT_NE(load_error("[checks]\nkernel_loops = [\"tile\"]\n").find("'tile' is not a dotted Python name"),
            std::string::npos);
  EXPECT_NE(load_error("[checks]\nkernel_loops = [\"x.tile(); y\"]\n").find("is not a dotted Python name"),
            std::string::npos);
  EXPECT_NE(load_error("[checks]\nkernel_loops = \"helion.language.tile\"\n").find("'kernel_loops' must be a list"),
            std::string::npos);
}

TEST(TargetRegistry, KernelModulesAreToolchainModuleNames) {
  EXPECT_EQ(load_error("[checks]\nkernel_modules = [\"triton\", \"helion.runtime\"]\n"), "no error");
  EXPECT_NE(load_error("[checks]\nkernel_modules = [\"triton/\"]\n").find("'triton/' is not a Python module name"),
            std::string::npos);
  EXPECT_NE(load_error("[checks]\nkernel_modules = \"triton\"\n").find("'kernel_modules' must be a list"),
            std::string::npos);
  // kforge's own packages, torch and the clocks stay watched and protected whatever a target says.
  for (const char* own : {"kforge_worker", "kforge_kernels.native", "torch", "time", "os.path"}) {
    auto error = load_error(fmt::format("[checks]\nkernel_modules = [\"{}\"]\n", own));
    EXPECT_NE(error.find("names a module kforge watches itself"), std::string::npos) << own << ": " << error;
  }
}

TEST(TargetRegistry, RequirementsNoteIsOneLine) {
  EXPECT_EQ(load_error("[requires]\nnote = \"chiplib is not installed by default\"\n"), "no error");
  EXPECT_NE(load_error("[requires]\nnote = 3\n").find("requires.note must be a string"), std::string::npos);
  EXPECT_NE(load_error("[requires]\nnote = \"two\\nlines\"\n").find("must be one non-empty line"), std::string::npos);
  EXPECT_NE(load_error("[requires]\nnote = \"\"\n").find("must be one non-empty line"), std::string::npos);
}

TEST(TargetRegistry, UnknownTargetListsTheKnownOnes) {
  auto root = make_targets("cpu", "name = \"cpu\"\nlanguage = \"cpp\"\ndevice = \"cpu\"\n");
  auto registry = TargetRegistry::load(root);
  try {
    registry.get("tpu");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "unknown target 'tpu' (known: cpu)");
  }
}

TEST(TargetRegistry, NameMustMatchFolderAndRequiredKeysMustExist) {
  EXPECT_THROW(TargetRegistry::load(make_targets("a", "name = \"b\"\nlanguage = \"cpp\"\ndevice = \"cpu\"\n")), InputError);
  EXPECT_THROW(TargetRegistry::load(make_targets("a", "name = \"a\"\nlanguage = \"cpp\"\n")), InputError);
  EXPECT_THROW(TargetRegistry::load(make_targets("a", "name = [")), InputError);
}

TEST(TargetRegistry, BundledTargetsLoad) {
  auto registry = TargetRegistry::load(fs::path(KFORGE_SOURCE_DIR) / "targets");
  ASSERT_NE(registry.find("cpu"), nullptr);
  EXPECT_TRUE(fs::exists(registry.get("cpu").example_candidate));
  EXPECT_TRUE(fs::exists(registry.get("cpu").notes));
  EXPECT_GE(registry.all().size(), 8u);
  for (const auto& t : registry.all()) {
    EXPECT_TRUE(fs::exists(t.example_reference)) << t.name;
    EXPECT_TRUE(fs::exists(t.example_candidate)) << t.name;
    EXPECT_TRUE(fs::exists(t.notes)) << t.name;
  }
}

TEST(TargetRegistry, LibraryCallsAreOnePolicyForEveryTarget) {
  // A library GEMM or convolution with the candidate's own kernels after it is accepted on each
  // target alike (--kernels-only empties the list for a run).
  auto registry = TargetRegistry::load(fs::path(KFORGE_SOURCE_DIR) / "targets");
  const auto& cpu = registry.get("cpu").allowed_torch_calls;
  EXPECT_FALSE(cpu.empty());
  for (const char* name : {"cuda", "triton"}) EXPECT_EQ(registry.get(name).allowed_torch_calls, cpu) << name;
}

}  // namespace
}  // namespace kforge
