#include "loop/standalone.h"

#include <cstdlib>
#include <fstream>

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::loop {
namespace {

const std::filesystem::path kHelpers = std::filesystem::path(KFORGE_SOURCE_DIR) / "worker" / "kforge_kernels";

TEST(Standalone, InlinesTheNativeHelperWhereItWasImported) {
  std::string src = "import torch\nfrom kforge_worker import native\n\nclass ModelNew:\n    pass\n";
  std::string out = make_standalone(src, kHelpers, "best candidate\nspeedup 3x");
  EXPECT_EQ(out.rfind("# best candidate\n# speedup 3x\n\nimport torch\n", 0), 0u) << out.substr(0, 200);
  EXPECT_EQ(out.find("\nfrom kforge_worker import native\n"), std::string::npos);
  EXPECT_NE(out.find("_kforge_native = _kforge_module(\"kforge_standalone.native\", \"\"\""), std::string::npos);
  EXPECT_NE(out.find("native = _kforge_native\n"), std::string::npos);
  EXPECT_NE(out.find("def load(source: str"), std::string::npos);  // the helper's own code
  EXPECT_LT(out.find("import torch\n"), out.find("_kforge_module"));
  EXPECT_NE(out.find("\nModel = ModelNew\n"), std::string::npos);
}

TEST(Standalone, HandlesEveryImportForm) {
  std::string src =
      "import kforge_worker.ocl as cl\nfrom kforge_worker.native import load, ptr as p  # helpers\n"
      "import kforge_worker.native\nfrom kforge_worker import native as nv, ocl\n";
  std::string out = make_standalone(src, kHelpers, "");
  EXPECT_NE(out.find("cl = _kforge_ocl\n"), std::string::npos);
  EXPECT_NE(out.find("load = _kforge_native.load\np = _kforge_native.ptr\n"), std::string::npos);
  EXPECT_NE(out.find("kforge_worker = _kforge_types.SimpleNamespace(native=_kforge_native)"), std::string::npos);
  EXPECT_NE(out.find("nv = _kforge_native\nocl = _kforge_ocl\n"), std::string::npos);
  // Each helper is embedded once.
  EXPECT_EQ(out.find("_kforge_native = _kforge_module"), out.rfind("_kforge_native = _kforge_module"));
}

TEST(Standalone, InlinesTheLibrariesUnderTheirPackageAndTheOlderName) {
  // kforge_kernels is the libraries' package; kforge_worker.<library> is the name older candidates use.
  std::string src =
      "from kforge_kernels import native\nimport kforge_kernels.ocl\nfrom kforge_worker.errors import CompileError\n"
      "from kforge_worker import native as old\n";
  std::string out = make_standalone(src, kHelpers, "");
  EXPECT_NE(out.find("native = _kforge_native\n"), std::string::npos);
  EXPECT_NE(out.find("kforge_kernels = _kforge_types.SimpleNamespace(ocl=_kforge_ocl)"), std::string::npos);
  EXPECT_NE(out.find("CompileError = _kforge_errors.CompileError\n"), std::string::npos);
  EXPECT_NE(out.find("old = _kforge_native\n"), std::string::npos);
  EXPECT_NE(out.find("class CompileError(Exception)"), std::string::npos);  // errors.py's own source
  EXPECT_EQ(out.find("_kforge_native = _kforge_module"), out.rfind("_kforge_native = _kforge_module"));
  EXPECT_EQ(out.find("\nfrom kforge_kernels import"), std::string::npos);
  EXPECT_EQ(out.find("sys.modules[__name__]"), std::string::npos);  // never the compatibility module
}

TEST(Standalone, ImportingTwoLibrariesOfOnePackageKeepsBoth) {
  // `import kforge_worker.native` then `import kforge_worker.ocl`: Python's package holds both.
  std::string src =
      "import kforge_worker.native\nimport kforge_worker.ocl\nimport kforge_kernels.ocl\nimport kforge_kernels.native\n"
      "class ModelNew:\n    pass\n";
  std::string out = make_standalone(src, kHelpers, "");
  EXPECT_NE(out.find("kforge_worker = _kforge_types.SimpleNamespace(native=_kforge_native)\n"
                     "kforge_worker.ocl = _kforge_ocl\n"
                     "kforge_kernels = _kforge_types.SimpleNamespace(ocl=_kforge_ocl)\n"
                     "kforge_kernels.native = _kforge_native\n"),
            std::string::npos)
      << out;
}

TEST(Standalone, TwoLibrariesOfOnePackageAreBothThereWhenTheFileRuns) {
  const auto python = std::filesystem::path(KFORGE_SOURCE_DIR) / ".venv" / "bin" / "python";
  if (!std::filesystem::exists(python)) GTEST_SKIP() << "no Python environment at .venv";
  std::string src =
      "import kforge_worker.native\nimport kforge_worker.ocl\n"
      "assert kforge_worker.native.__name__ == 'kforge_standalone.native', kforge_worker.native\n"
      "assert kforge_worker.ocl.__name__ == 'kforge_standalone.ocl', kforge_worker.ocl\n"
      "class ModelNew:\n    pass\n";
  const auto dir = std::filesystem::path(testing::TempDir()) / "kforge_standalone_two_libraries";
  std::filesystem::create_directories(dir);
  const auto file = dir / "best.py";
  std::ofstream(file) << make_standalone(src, kHelpers, "");
  // -I: isolated from PYTHONPATH and the user's site packages, so no kforge library can be imported.
  EXPECT_EQ(std::system(("cd '" + dir.string() + "' && '" + python.string() + "' -I best.py").c_str()), 0) << file;
}

TEST(Standalone, ProgramsWithoutHelpersOnlyGetTheAlias) {
  std::string out = make_standalone("import torch\nclass ModelNew: pass\n", kHelpers, "");
  EXPECT_EQ(out.find("_kforge_module"), std::string::npos);
  EXPECT_THROW(make_standalone("from kforge_worker import nonexistent\n", kHelpers, ""), InputError);
}

}  // namespace
}  // namespace kforge::loop
