#include "loop/transfer_source.h"

#include <gtest/gtest.h>

#include "util/hash.h"
#include "util/paths.h"

namespace kforge::loop {
namespace {

namespace fs = std::filesystem;

TEST(TransferSource, TheStoredEvaluationNamesTheTarget) {
  fs::path dir = make_temp_dir("kforge-transfer-test-");
  Store store(dir / "kforge.db");
  const std::string source = "import torch\nclass ModelNew: pass\n";
  EXPECT_EQ(transfer_source_target(store, source), "another");  // nothing recorded, no marker
  store.add_evaluation({{"candidate_sha256", sha256_hex(source)}, {"target", "opencl"}, {"status", "correct"}}, source);
  EXPECT_EQ(transfer_source_target(store, source), "opencl");
  store.add_evaluation({{"candidate_sha256", sha256_hex(source)}, {"target", "wgpu"}, {"status", "correct"}}, source);
  EXPECT_EQ(transfer_source_target(store, source), "wgpu");  // the latest evaluation wins
  fs::remove_all(dir);
}

TEST(TransferSource, ABestFileNamesItsTargetInItsHeader) {
  fs::path dir = make_temp_dir("kforge-transfer-test-");
  Store store(dir / "kforge.db");
  EXPECT_EQ(transfer_source_target(store, "# kforge run 3: best candidate\n# kforge target: cuda\n\nimport torch\n"),
            "cuda");
  // Only the leading comment block counts: code cannot claim a target.
  EXPECT_EQ(transfer_source_target(store, "import torch\n# kforge target: cuda\n"), "another");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kforge::loop
