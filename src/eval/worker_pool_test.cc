#include "eval/worker_pool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

namespace kforge {
namespace {

namespace fs = std::filesystem;

class WorkerPoolKey : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kforge-pool-key-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    write("a.py", "class Model: pass\n");
    write("b.py", "class Model: pass  # another problem\n");
    base_.problem = dir_ / "a.py";
    base_.candidate = dir_ / "cand.py";
    base_.python = "python3";
    base_.sandbox = false;  // the key must not depend on whether bubblewrap works here
    base_.log_dir = dir_ / "logs-1";
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }

  fs::path dir_;
  EvalOptions base_;
};

TEST_F(WorkerPoolKey, AWorkerStandsInOnlyForOneStartedTheSameWay) {
  for (WorkerRole role : {WorkerRole::kReference, WorkerRole::kCandidate}) {
    const std::string key = worker_pool_key(role, base_, 2);
    EvalOptions other_eval = base_;  // another candidate and log folder: the same worker will do
    other_eval.candidate = dir_ / "other.py";
    other_eval.log_dir = dir_ / "logs-2";
    EXPECT_EQ(worker_pool_key(role, other_eval, 2), key);
    EXPECT_NE(worker_pool_key(role, base_, 4), key) << "threads";
    EvalOptions device = base_;
    device.device = "cuda:1";
    EXPECT_NE(worker_pool_key(role, device, 2), key) << "device";
    EvalOptions env = base_;
    env.worker_env["TRITON_INTERPRET"] = "1";
    EXPECT_NE(worker_pool_key(role, env, 2), key) << "environment";
  }
  // A reference serves one problem file (a candidate depends on it only through its sandbox, which
  // hides that file), and not once the file has changed.
  EvalOptions problem = base_;
  problem.problem = dir_ / "b.py";
  EXPECT_NE(worker_pool_key(WorkerRole::kReference, problem, 2), worker_pool_key(WorkerRole::kReference, base_, 2));
  const std::string before = worker_pool_key(WorkerRole::kReference, base_, 2);
  write("a.py", "class Model: pass  # edited\n");
  EXPECT_NE(worker_pool_key(WorkerRole::kReference, base_, 2), before);
}

TEST(StaleWorkerDirs, OnlyFoldersOfKforgeProcessesThatAreGoneAreRemoved) {
  const fs::path tmp = fs::temp_directory_path() / ("kforge-stale-test-" + std::to_string(getpid()));
  fs::create_directories(tmp);
  // A pid that is certainly free: a child that has exited and been waited for.
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  waitpid(dead, nullptr, 0);
  const fs::path gone = tmp / ("kforge-eval-" + std::to_string(dead) + "-abc123");
  const fs::path gone_ref = tmp / ("kforge-ref-" + std::to_string(dead) + "-def456");
  const fs::path mine = tmp / ("kforge-eval-" + std::to_string(getpid()) + "-ghi789");
  const fs::path other = tmp / "kforge-eval-xyz";  // no owner in its name: not ours to judge
  for (const auto& d : {gone, gone_ref, mine, other}) fs::create_directories(d / "candidate");
  std::ofstream(gone / "candidate" / "outputs.pt") << "left by a crash";
  EXPECT_EQ(remove_stale_worker_dirs(tmp), 2);
  EXPECT_FALSE(fs::exists(gone));
  EXPECT_FALSE(fs::exists(gone_ref));
  EXPECT_TRUE(fs::exists(mine)) << "this process is alive";
  EXPECT_TRUE(fs::exists(other));
  fs::remove_all(tmp);
}

}  // namespace
}  // namespace kforge
