#include "store/store.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace kforge {
namespace {

std::filesystem::path temp_db() {
  char t[] = "/tmp/kforge-store-XXXXXX";
  return std::filesystem::path(mkdtemp(t)) / "kforge.db";
}

TEST(Store, RecordsEvaluationsWithTheirCandidateSource) {
  auto path = temp_db();
  std::int64_t id;
  {
    Store store(path);
    nlohmann::json result = {{"candidate_sha256", "abc"}, {"problem", "p.py"}, {"problem_sha256", "def"},
                             {"target", "cpu"}, {"device", "cpu"}, {"status", "correct"}, {"speedup_vs_eager", 2.5},
                             {"speedup_vs_compile", nullptr}};
    id = store.add_evaluation(result, "class ModelNew: pass\n");
    store.add_evaluation(result, "class ModelNew: pass\n");
  }
  Store reopened(path);
  auto e = reopened.evaluation(id);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, "correct");
  EXPECT_EQ(e->result["speedup_vs_eager"], 2.5);
  EXPECT_EQ(reopened.evaluations_of("abc").size(), 2u);
  EXPECT_EQ(reopened.candidate_source("abc"), "class ModelNew: pass\n");
  EXPECT_EQ(reopened.schema_version(), 1);
}

TEST(Store, UnknownIdsAreAbsent) {
  Store store(temp_db());
  EXPECT_FALSE(store.evaluation(42));
  EXPECT_FALSE(store.candidate_source("nope"));
}

}  // namespace
}  // namespace kforge
