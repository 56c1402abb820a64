// How a candidate's sandbox is assembled (needs bubblewrap and the project's Python environment).
#include "eval/worker_launch.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "target/target.h"
#include "util/sandbox.h"
#include "util/scoped_env.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

bool binds_read_only(const std::vector<std::string>& argv, const fs::path& dir) {
  for (size_t i = 0; i + 2 < argv.size(); ++i)
    if (argv[i] == "--ro-bind" && argv[i + 1] == dir.string() && argv[i + 2] == dir.string()) return true;
  return false;
}

// Triton builds its launcher with $CC at run time: a compiler installed under /opt (as on machines
// with a newer gcc in /opt/gcc) must be inside the candidate's view, read-only.
TEST(WorkerSpawn, ACompilerOutsideUsrNamedByCcIsInTheCandidatesView) {
  const fs::path source = KFORGE_SOURCE_DIR;
  if (!fs::exists(source / ".venv" / "bin" / "python")) GTEST_SKIP() << "no Python environment at .venv";
  if (!usable_bwrap()) GTEST_SKIP() << "bubblewrap cannot make a sandbox here";
  const fs::path opt = "/opt/kforge-cc-test-" + std::to_string(::getpid());
  std::error_code ec;
  fs::create_directories(opt / "bin", ec);
  if (ec) GTEST_SKIP() << "cannot create " << opt << ": " << ec.message();
  std::ofstream(opt / "bin" / "gcc") << "#!/bin/sh\n";
  fs::permissions(opt / "bin" / "gcc", fs::perms::owner_all);
  EvalOptions options;
  options.problem = source / "tests" / "e2e" / "problems" / "tiny_add.py";
  options.target = load_target(source / "targets" / "cpu");
  options.python = (source / ".venv" / "bin" / "python").string();
  const WorkerDirs dirs{"/tmp/kforge-test-shared", "", "/tmp/kforge-test-candidate"};
  const auto with_cc = [&] {
    ScopedEnv cc("CC", (opt / "bin" / "gcc").string());
    return worker_spawn(WorkerRole::kCandidate, options, dirs, 1);
  }();
  const auto without_cc = [&] {
    ScopedEnv cc("CC", std::nullopt);
    return worker_spawn(WorkerRole::kCandidate, options, dirs, 1);
  }();
  fs::remove_all(opt);

  ASSERT_EQ(with_cc.isolation, "bubblewrap");
  EXPECT_TRUE(binds_read_only(with_cc.spawn.argv, opt)) << "the toolchain's folder, read-only";
  EXPECT_FALSE(binds_read_only(without_cc.spawn.argv, opt)) << "only when a compiler there is named";
  EXPECT_FALSE(binds_read_only(with_cc.spawn.argv, "/opt")) << "never all of /opt (only an empty folder on the way)";
}

// Bytecode goes to one folder of kforge's cache: the trusted reference writes it, a candidate only
// reads it (its sandbox binds the folder read-only), and nothing is written beside the sources.
TEST(WorkerEnvironment, BytecodeIsCachedByTheReferenceAndReadOnlyToCandidates) {
  const fs::path source = KFORGE_SOURCE_DIR;
  ScopedEnv cache_dir("KFORGE_CACHE_DIR", "/tmp/kforge-test-cache");
  EvalOptions options;
  options.target = load_target(source / "targets" / "cpu");
  const WorkerDirs dirs{"/tmp/kforge-test-shared", "/tmp/kforge-test-reference", "/tmp/kforge-test-candidate"};
  const auto reference = worker_environment(WorkerRole::kReference, options, dirs, 1);
  const auto candidate = worker_environment(WorkerRole::kCandidate, options, dirs, 1, true);
  EXPECT_EQ(reference.at("PYTHONPYCACHEPREFIX"), "/tmp/kforge-test-cache/pycache");
  EXPECT_EQ(candidate.at("PYTHONPYCACHEPREFIX"), "/tmp/kforge-test-cache/pycache");
  EXPECT_FALSE(reference.count("PYTHONDONTWRITEBYTECODE"));
  EXPECT_EQ(candidate.at("PYTHONDONTWRITEBYTECODE"), "1");

  if (!fs::exists(source / ".venv" / "bin" / "python")) GTEST_SKIP() << "no Python environment at .venv";
  if (!usable_bwrap()) GTEST_SKIP() << "bubblewrap cannot make a sandbox here";
  options.problem = source / "tests" / "e2e" / "problems" / "tiny_add.py";
  options.python = (source / ".venv" / "bin" / "python").string();
  const auto spawn = worker_spawn(WorkerRole::kCandidate, options, dirs, 1);
  ASSERT_EQ(spawn.isolation, "bubblewrap");
  EXPECT_TRUE(binds_read_only(spawn.spawn.argv, "/tmp/kforge-test-cache/pycache"));
}

}  // namespace
}  // namespace kforge
