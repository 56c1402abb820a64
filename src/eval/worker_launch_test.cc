// How a candidate's sandbox is assembled (needs bubblewrap and the project's Python environment).
#include "eval/worker_launch.h"

#include <unistd.h>

#include <algorithm>
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
TEST(ResolvePython, ARelativePathIsMadeAbsoluteWithoutFollowingLinks) {
  // `--python .venv/bin/python` must not be looked up from the sandbox's working folder.
  const fs::path here = fs::current_path();
  EXPECT_EQ(resolve_python(".venv/bin/python", ""), (here / ".venv/bin/python").string());
  EXPECT_EQ(resolve_python("", "./env/../venv/bin/python"), (here / "venv/bin/python").string());
  EXPECT_EQ(resolve_python("/opt/torch/.venv/bin/python3", "x"), "/opt/torch/.venv/bin/python3");
  EXPECT_EQ(resolve_python("python3", ""), "python3");  // a bare name is looked up on PATH
}

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

// Nsight Compute around a sandboxed candidate: CUDA's bin/ncu is a launcher that finds the real ncu
// (its injection libraries, its sections) in the toolkit's nsight-compute-<version> folder or under
// /opt/nvidia/nsight-compute; inside a sandbox without them every profile failed with
// "nsight-compute directory is not found under .../bin/../". The install tree is bound, read-only.
TEST(WorkerSpawn, NsightComputesInstallTreeIsInTheCandidatesViewReadOnly) {
  const fs::path source = KFORGE_SOURCE_DIR;
  if (!fs::exists(source / ".venv" / "bin" / "python")) GTEST_SKIP() << "no Python environment at .venv";
  if (!usable_bwrap()) GTEST_SKIP() << "bubblewrap cannot make a sandbox here";
  const fs::path toolkit = fs::temp_directory_path() / ("kforge-ncu-test-" + std::to_string(::getpid()));
  fs::create_directories(toolkit / "bin");
  fs::create_directories(toolkit / "nsight-compute-2025.3.0" / "target");
  std::ofstream(toolkit / "bin" / "ncu") << "#!/bin/sh\n";
  fs::permissions(toolkit / "bin" / "ncu", fs::perms::owner_all);
  EvalOptions options;
  options.problem = source / "tests" / "e2e" / "problems" / "tiny_add.py";
  options.target = load_target(source / "targets" / "cpu");
  options.python = (source / ".venv" / "bin" / "python").string();
  const WorkerDirs dirs{"/tmp/kforge-test-shared", "", "/tmp/kforge-test-candidate"};
  const auto plain = worker_spawn(WorkerRole::kCandidate, options, dirs, 1);
  options.candidate_wrapper = {(toolkit / "bin" / "ncu").string(), "--export", "/tmp/kforge-test-candidate/c.ncu-rep"};
  const auto wrapped = worker_spawn(WorkerRole::kCandidate, options, dirs, 1);
  const fs::path real = fs::canonical(toolkit);
  fs::remove_all(toolkit);

  ASSERT_EQ(wrapped.isolation, "bubblewrap");
  EXPECT_TRUE(binds_read_only(wrapped.spawn.argv, real / "nsight-compute-2025.3.0")) << "ncu's own tree";
  EXPECT_TRUE(binds_read_only(wrapped.spawn.argv, real / "bin")) << "the launcher's folder";
  EXPECT_FALSE(binds_read_only(plain.spawn.argv, real / "nsight-compute-2025.3.0")) << "only under the wrapper";
  // The wrapper runs inside the sandbox, in front of the worker.
  const auto& argv = wrapped.spawn.argv;
  auto at = std::find(argv.begin(), argv.end(), (toolkit / "bin" / "ncu").string());
  ASSERT_NE(at, argv.end());
  EXPECT_NE(std::find(at, argv.end(), "kforge_worker"), argv.end());
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
