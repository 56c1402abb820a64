// Two candidates timed against each other with the real worker on the CPU (skips without the
// project's Python environment).
#include "eval/head_to_head.h"

#include <signal.h>

#include <fstream>

#include <gtest/gtest.h>

#include "eval/worker_launch.h"
#include "eval/worker_pool.h"
#include "target/target.h"
#include "util/paths.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

// tests/e2e/problems/tiny_add.py: a * scale + b on 4096 floats.
constexpr const char* kFast = R"(import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        return a * self.scale + b
)";

// The same result after 3000 more operations on the tensor: hundreds of times slower.
constexpr const char* kSlow = R"(import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, a, b):
        out = a * self.scale + b
        for _ in range(3000):
            out = out + 0.0
        return out
)";

// Right for its first three calls (the correctness trials), then the last result again.
constexpr const char* kStale = R"(import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale
        self.calls = 0
        self.last = None

    def forward(self, a, b):
        self.calls += 1
        if self.calls <= 3:
            self.last = a * self.scale + b
        return self.last
)";

class HeadToHeadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const fs::path source = KFORGE_SOURCE_DIR;
    if (!fs::exists(source / ".venv" / "bin" / "python")) GTEST_SKIP() << "no Python environment at .venv";
    signal(SIGPIPE, SIG_IGN);  // as kforge does: a worker that died must not end the test
    dir_ = make_temp_dir("kforge-h2h-");
    options_.problem = source / "tests" / "e2e" / "problems" / "tiny_add.py";
    options_.target = load_target(source / "targets" / "cpu");
    options_.device = "cpu";
    options_.python = resolve_python("", "");
    options_.trials = 3;
    options_.threads = 1;
    options_.seed = 7;
    options_.warmup = 1;
    options_.reps = 10;
    options_.block = 2;
    options_.log_dir = dir_ / "logs";
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  fs::path write(const std::string& name, const char* text) {
    std::ofstream(dir_ / name) << text;
    return dir_ / name;
  }

  fs::path dir_;
  EvalOptions options_;
};

TEST_F(HeadToHeadTest, TheFasterCandidateWinsOnEveryRound) {
  WorkerPool pool;
  HeadToHead r = compare_candidates(options_, write("slow.py", kSlow), write("fast.py", kFast), pool);
  ASSERT_TRUE(r.complete()) << r.to_json().dump(2);
  EXPECT_EQ(r.threads, 1);
  EXPECT_EQ(r.a.stats.reps, 10);
  EXPECT_EQ(r.b.stats.reps, 10);
  EXPECT_EQ(r.eager.reps, 10);
  ASSERT_EQ(r.ratio_samples.size(), 5u);  // one per round
  for (double ratio : r.ratio_samples) EXPECT_GT(ratio, 5.0) << r.to_json().dump(2);
  EXPECT_TRUE(r.b_vs_a.faster());
  EXPECT_GT(r.b_vs_a.low, 5.0);
}

TEST_F(HeadToHeadTest, ACandidateReturningStaleResultsIsStoppedByTheOutputCheck) {
  WorkerPool pool;
  HeadToHead r = compare_candidates(options_, write("fast.py", kFast), write("stale.py", kStale), pool);
  EXPECT_FALSE(r.complete());
  EXPECT_TRUE(r.problem_error.empty()) << r.problem_error;
  EXPECT_TRUE(r.a.status.empty()) << r.a.error.dump();
  EXPECT_EQ(r.b.status, "rejected") << r.b.error.dump();
  EXPECT_EQ(r.b.error.value("kind", ""), "timed_output");
  EXPECT_TRUE(r.ratio_samples.empty() || r.ratio_samples.size() < 5u);
}

}  // namespace
}  // namespace kforge
