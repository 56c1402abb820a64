#include "eval/worker_launch.h"

#include <unistd.h>

#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/environment.h"
#include "util/errors.h"
#include "util/paths.h"
#include "util/sandbox.h"

namespace kforge {

namespace fs = std::filesystem;

const char* const kWorkerEnvAllowlist[] = {
    "PATH", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "USER", "LOGNAME", "CC", "CXX", "CUDA_HOME", "CUDA_PATH",
    "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "OCL_ICD_VENDORS", "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE", nullptr};

namespace {

struct PythonInfo {
  std::vector<fs::path> prefixes;  // everything the interpreter needs to read
};

// sys.prefix, sys.base_prefix, the executable's real location and the directories on the
// interpreter's own import path (a package directory added by a .pth file of the environment may
// lie anywhere, under a home directory the sandbox hides included), probed once per interpreter.
// -I: the path the worker sees, without the caller's PYTHONPATH or user site directory.
const PythonInfo& python_info(const std::string& python) {
  static std::mutex mutex;
  static std::map<std::string, PythonInfo> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(python);
  if (it != cache.end()) return it->second;
  PythonInfo info;
  auto r = run_command({python, "-I", "-c",
                        "import sys, os, json; print(json.dumps([[sys.prefix, sys.base_prefix, sys.exec_prefix, "
                        "os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))], "
                        "[p for p in sys.path if os.path.isabs(p) and os.path.isdir(p)]]))"},
                       std::chrono::seconds(30));
  if (r.exit_code != 0)
    throw InputError(fmt::format("python interpreter '{}' does not run: {}", python, r.output.substr(0, 300)));
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('[')), nullptr, false);
  if (j.is_array())
    for (const auto& list : j)
      for (const auto& p : list) info.prefixes.push_back(fs::path(p.get<std::string>()));
  return cache.emplace(python, info).first->second;
}

}  // namespace

std::string resolve_python(const std::string& from_flag, const std::string& from_config) {
  if (!from_flag.empty()) return from_flag;
  if (!from_config.empty()) return from_config;
  // A build tree's .venv (scripts/setup.sh), else the environment of an installed kforge
  // (share/kforge/setup-worker.sh).
  for (const fs::path& venv : {data_dir() / ".venv", user_worker_venv()})
    if (fs::exists(venv / "bin" / "python")) return (venv / "bin" / "python").string();
  return "python3";
}

std::map<std::string, std::string> worker_environment(WorkerRole role, const EvalOptions& options,
                                                      const WorkerDirs& dirs, int threads) {
  const auto parent = current_environment();
  std::map<std::string, std::string> env;
  for (int i = 0; kWorkerEnvAllowlist[i]; ++i)
    if (auto it = parent.find(kWorkerEnvAllowlist[i]); it != parent.end()) env[it->first] = it->second;
  for (const auto& name : options.target.env_pass)
    if (auto it = parent.find(name); it != parent.end() && !looks_secret(name)) env[name] = it->second;
  for (const auto& [k, v] : options.target.env_set)
    if (!looks_secret(k)) env[k] = v;
  for (const auto& [k, v] : options.worker_env) env[k] = v;
  if (!env.count("PATH")) env["PATH"] = "/usr/local/bin:/usr/bin:/bin";

  const fs::path cache = cache_dir();
  const fs::path home = role == WorkerRole::kCandidate ? dirs.candidate : dirs.reference;
  env["HOME"] = home.string();
  env["TMPDIR"] = (home / "tmp").string();
  env["PYTHONPATH"] = (data_dir() / "worker").string();
  env["PYTHONDONTWRITEBYTECODE"] = "1";
  env["PYTHONNOUSERSITE"] = "1";
  env["KFORGE_RESPONSE_FD"] = "3";
  env["KFORGE_WORKDIR"] = home.string();
  env["KFORGE_BUILD_CACHE"] = (cache / "build").string();
  env["TORCH_EXTENSIONS_DIR"] = (cache / "torch_extensions").string();
  env["TORCHINDUCTOR_CACHE_DIR"] = (cache / "inductor").string();
  env["TRITON_CACHE_DIR"] = (cache / "triton").string();
  env["POCL_CACHE_DIR"] = (cache / "pocl").string();
  env["XDG_CACHE_HOME"] = (home / "xdg-cache").string();
  const std::string t = std::to_string(threads);
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) env[name] = t;
  return env;
}

WorkerSpawn worker_spawn(WorkerRole role, const EvalOptions& options, const WorkerDirs& dirs, int threads) {
  const bool candidate = role == WorkerRole::kCandidate;
  const fs::path home = candidate ? dirs.candidate : dirs.reference;
  const fs::path cache = cache_dir();

  WorkerSpawn result;
  SpawnOptions& spawn = result.spawn;
  spawn.env = worker_environment(role, options, dirs, threads);
  spawn.cwd = home;
  spawn.log_file = options.log_dir / (candidate ? "candidate.log" : "reference.log");
  const std::vector<std::string> worker = {options.python, "-u", "-m", "kforge_worker", "serve", "--role",
                                           candidate ? "candidate" : "reference"};
  // A wrapper (Nsight Compute under `kforge profile`) runs inside the same sandbox as the worker.
  std::vector<std::string> command = candidate ? options.candidate_wrapper : options.reference_wrapper;
  command.insert(command.end(), worker.begin(), worker.end());
  std::string& isolation = result.isolation;
  isolation = "process-group";
  if (candidate) {
    spawn.log_cap_bytes = 16ull << 20;
    if (options.target.address_space_gb > 0)
      spawn.limits.address_space_bytes = static_cast<std::uint64_t>(options.target.address_space_gb * (1ull << 30));
    spawn.limits.file_size_bytes = 8ull << 30;
    auto bwrap = options.sandbox ? usable_bwrap() : std::nullopt;
    if (bwrap) {
      SandboxPolicy policy;
      if (const char* h = std::getenv("HOME"); h && *h) policy.hidden_dirs.push_back(h);
      policy.hidden_dirs.push_back("/root");
      policy.hidden_dirs.push_back(state_dir());
      if (options.config_path) policy.hidden_files.push_back(*options.config_path);
      policy.hidden_files.push_back(options.problem);  // the candidate has no business reading it
      for (const auto& p : python_info(options.python).prefixes) policy.read_only.push_back(p);
      policy.read_only.push_back(data_dir() / "worker");
      policy.read_only.push_back(dirs.shared);
      policy.writable = {dirs.candidate, cache / "build", cache / "torch_extensions", cache / "triton", cache / "pocl"};
      policy.devices = options.target.device != "cpu";
      // Everything else under /tmp (the reference's directory included) stays behind a private tmpfs.
      spawn.argv = sandboxed_command(*bwrap, policy, command);
      isolation = "bubblewrap";
    } else {
      spawn.argv = command;
      isolation = options.sandbox ? "process-group (bubblewrap unavailable)" : "process-group (--no-sandbox)";
    }
  } else {
    spawn.log_cap_bytes = 256ull << 20;
    spawn.argv = command;
    isolation = "none (trusted reference)";
  }
  return result;
}

std::unique_ptr<Subprocess> start_worker(const WorkerSpawn& how) {
  fs::create_directories(how.spawn.cwd / "tmp");  // the worker's HOME and TMPDIR
  const fs::path cache = cache_dir();
  for (const char* sub : {"build", "torch_extensions", "inductor", "triton", "pocl"}) fs::create_directories(cache / sub);
  return Subprocess::spawn(how.spawn);
}

LaunchedWorker launch_worker(WorkerRole role, const EvalOptions& options, const WorkerDirs& dirs, int threads) {
  WorkerSpawn how = worker_spawn(role, options, dirs, threads);
  return {start_worker(how), how.isolation};
}

}  // namespace kforge
