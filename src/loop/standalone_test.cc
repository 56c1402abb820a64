#include "loop/standalone.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::loop {
namespace {

const std::filesystem::path kHelpers = std::filesystem::path(KFORGE_SOURCE_DIR) / "worker" / "kforge_kernels";

TEST(Standalone, IsTheCandidateUnderItsHeaderWithTheModelAlias) {
  std::string src = "import torch\nfrom kforge_kernels import native\n\nclass ModelNew:\n    pass\n";
  std::string out = make_standalone(src, kHelpers, "best candidate\nspeedup 3x");
  EXPECT_EQ(out.rfind("# best candidate\n# speedup 3x\n\n" + src, 0), 0u) << out.substr(0, 200);
  EXPECT_NE(out.find("\nModel = ModelNew\n"), std::string::npos);
  // Nothing kforge's static checks refuse: no embedded source run through exec, no __dict__.
  EXPECT_EQ(out.find("exec("), std::string::npos);
  EXPECT_EQ(out.find("__dict__"), std::string::npos);
}

TEST(Standalone, ImportsUnderTheOlderNameUseTheLibrariesPackage) {
  std::string src =
      "import kforge_worker.ocl as cl\nfrom kforge_worker.native import load, ptr as p  # helpers\n"
      "from kforge_worker import native as nv, ocl\nimport kforge_worker_extra\n";
  std::string out = make_standalone(src, kHelpers, "");
  EXPECT_NE(out.find("import kforge_kernels.ocl as cl\n"), std::string::npos) << out;
  EXPECT_NE(out.find("from kforge_kernels.native import load, ptr as p  # helpers\n"), std::string::npos);
  EXPECT_NE(out.find("from kforge_kernels import native as nv, ocl\n"), std::string::npos);
  EXPECT_NE(out.find("import kforge_worker_extra\n"), std::string::npos);  // not one of the libraries' imports
  EXPECT_TRUE(imports_kernel_libraries(src));
  EXPECT_FALSE(imports_kernel_libraries("import torch\n"));
}

TEST(Standalone, RunsWithoutKforgeInstalledFromTheLibrariesWrittenBesideIt) {
  const auto python = std::filesystem::path(KFORGE_SOURCE_DIR) / ".venv" / "bin" / "python";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << "no Python environment at .venv";
  std::string src =
      "import kforge_kernels.native\nfrom kforge_worker import ocl\n"
      "assert kforge_kernels.native.load and ocl.__name__ == 'kforge_kernels.ocl', ocl\n"
      "class ModelNew:\n    pass\n";
  const auto dir = std::filesystem::path(testing::TempDir()) / "kforge_standalone_libraries";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto file = dir / "best.py";
  std::ofstream(file) << make_standalone(src, kHelpers, "");
  write_kernel_libraries(kHelpers, dir);
  // -s -E: no PYTHONPATH and no user site packages, so only the folder beside best.py has the libraries.
  EXPECT_EQ(std::system(("cd '" + dir.string() + "' && '" + python.string() + "' -s -E best.py").c_str()), 0) << file;
}

TEST(Standalone, ProgramsWithoutLibrariesOnlyGetTheAlias) {
  std::string out = make_standalone("import torch\nclass ModelNew: pass\n", kHelpers, "");
  EXPECT_EQ(out, "import torch\nclass ModelNew: pass\n\n\n# Drop-in replacement for the reference: `from this_file import Model`.\nModel = ModelNew\n");
  EXPECT_THROW(make_standalone("from kforge_worker import nonexistent\n", kHelpers, ""), InputError);
}

}  // namespace
}  // namespace kforge::loop
