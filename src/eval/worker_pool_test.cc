#include "eval/worker_pool.h"

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

}  // namespace
}  // namespace kforge
