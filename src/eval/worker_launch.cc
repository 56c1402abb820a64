#include "eval/worker_launch.h"

#include <glob.h>
#include <unistd.h>

#include <algorithm>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/environment.h"
#include "util/errors.h"
#include "util/files.h"
#include "util/paths.h"
#include "util/sandbox.h"
#include "util/program_path.h"
#include "util/subprocess.h"

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

nlohmann::json warm_args(const EvalOptions& options, int threads, bool preload) {
  // A build-only evaluation never touches the device (it runs where there is none).
  return {{"device", options.compile_only ? "cpu" : options.device}, {"threads", threads},
          {"preload", preload ? options.target.preload : std::vector<std::string>{}}};
}

std::string resolve_python(const std::string& from_flag, const std::string& from_config) {
  // A relative path would run from the worker's working folder (the sandbox's): make it absolute
  // here, without following links (a virtual environment's python is a link that must stay one). A
  // bare name ("python3") is looked up on PATH.
  auto absolute = [](const std::string& p) {
    return p.find('/') == std::string::npos ? p : fs::absolute(p).lexically_normal().string();
  };
  if (!from_flag.empty()) return absolute(from_flag);
  if (!from_config.empty()) return absolute(from_config);
  // A build tree's .venv (scripts/setup.sh), else the environment of an installed kforge
  // (share/kforge/setup-worker.sh).
  for (const fs::path& venv : {data_dir() / ".venv", user_worker_venv()})
    if (fs::exists(venv / "bin" / "python")) return (venv / "bin" / "python").string();
  return "python3";
}

std::map<std::string, std::string> worker_environment(WorkerRole role, const EvalOptions& options,
                                                      const WorkerDirs& dirs, int threads, bool sandboxed) {
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

  const bool candidate = role == WorkerRole::kCandidate;
  const fs::path cache = cache_dir();
  const fs::path home = candidate ? dirs.candidate : dirs.reference;
  // A candidate's private folders: its sandbox's tmpfs, or (without one) a folder of its own.
  const fs::path own = sandboxed ? fs::path("/tmp") : home / "tmp";
  env["HOME"] = sandboxed ? "/tmp" : home.string();
  env["TMPDIR"] = own.string();
  env["PYTHONPATH"] = (data_dir() / "worker").string();
  // Bytecode of what the workers import lives in kforge's cache, compiled by the trusted reference
  // and read-only to candidates: an interpreter installed without .pyc files (uv's default) would
  // otherwise compile torch's modules again in every worker, seconds each time. Nothing is written
  // beside the sources (a problem's folder, the venv).
  env["PYTHONPYCACHEPREFIX"] = (cache / "pycache").string();
  if (candidate) env["PYTHONDONTWRITEBYTECODE"] = "1";
  env["PYTHONNOUSERSITE"] = "1";
  env["KFORGE_RESPONSE_FD"] = "3";
  env["KFORGE_WORKDIR"] = home.string();
  // Shared caches, written only by kforge's builder: a candidate sees them read-only.
  env["KFORGE_BUILD_CACHE"] = (cache / "build").string();
  env["TORCH_EXTENSIONS_DIR"] = (cache / "torch_extensions").string();
  if (candidate) {
    // Caches filled inside the candidate's own process are its own and go with it; the reference
    // never loads from them.
    env["KFORGE_BUILD_FD"] = "4";
    env["KFORGE_LAUNCH_CACHE"] = (own / "launch-cache").string();
    env["TORCHINDUCTOR_CACHE_DIR"] = (own / "inductor").string();
    env["XDG_CACHE_HOME"] = (own / "xdg-cache").string();
    env["USER"] = env["LOGNAME"] = "kforge-candidate";
  } else {
    env["TORCHINDUCTOR_CACHE_DIR"] = (cache / "inductor").string();
    env["XDG_CACHE_HOME"] = (home / "xdg-cache").string();
  }
  // The target's own caches ([caches], checked to lie under the cache directory when it was loaded).
  for (const auto& [name, folder] : options.target.caches) env[name] = ((candidate ? own : cache) / folder).string();
  const std::string t = std::to_string(threads);
  for (const char* name : {"OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"}) env[name] = t;
  return env;
}

namespace {

// A candidate that builds with torch's load_inline gets its builder started ahead (BuildBroker).
bool calls_load_inline(const fs::path& candidate) {
  try {
    return !candidate.empty() && read_file(candidate).find("load_inline") != std::string::npos;
  } catch (const std::exception&) {
    return false;  // the evaluation reports an unreadable candidate itself
  }
}

std::uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page) : 0;
}

// The device nodes present here that match the target's [sandbox] devices (globs from the allowlist
// that loading the target enforced): nothing else of /dev.
std::vector<fs::path> sandbox_device_nodes(const Target& target) {
  std::vector<fs::path> nodes;
  for (const auto& pattern : target.sandbox_devices) {
    glob_t g{};
    if (::glob(pattern.c_str(), 0, nullptr, &g) == 0)
      for (std::size_t i = 0; i < g.gl_pathc; ++i) nodes.emplace_back(g.gl_pathv[i]);
    ::globfree(&g);
  }
  return nodes;
}

// What a sandbox needs to run the worker's interpreter and the toolchains, read-only.
// What a wrapper tool (Nsight Compute under `kforge profile`) needs inside the candidate's sandbox,
// read-only: the folder of its real binary and its install tree. CUDA's `bin/ncu` is a launcher
// script that looks for `<toolkit>/nsight-compute*` and `/opt/nvidia/nsight-compute/<version>`, where
// the real ncu, its injection libraries and its sections are; without them it fails inside the
// sandbox with "nsight-compute directory is not found". Its temporary files go to the sandbox's /tmp.
std::vector<fs::path> wrapper_paths(const std::vector<std::string>& wrapper) {
  std::vector<fs::path> paths;
  if (wrapper.empty()) return paths;
  std::error_code ec;
  const fs::path real = fs::canonical(wrapper.front(), ec);
  if (ec) return paths;
  if (real.filename() != "ncu") return {real.parent_path()};
  // The tree first, then what lies inside it: a folder is bound once, and the tree's bind covers it.
  const fs::path root = real.parent_path().parent_path();  // the toolkit (bin/ncu) or /opt/nvidia/nsight-compute
  paths.push_back(root);
  paths.push_back(real.parent_path());
  for (const auto& entry : fs::directory_iterator(root, ec))
    if (entry.path().filename().string().rfind("nsight-compute", 0) == 0) paths.push_back(entry.path());
  if (fs::is_directory("/opt/nvidia/nsight-compute", ec)) paths.emplace_back("/opt/nvidia/nsight-compute");
  return paths;
}

std::vector<fs::path> runtime_paths(const EvalOptions& options, const std::map<std::string, std::string>& env) {
  std::vector<fs::path> paths;
  for (const auto& p : python_info(options.python).prefixes) paths.push_back(p);
  paths.push_back(data_dir() / "worker");
  for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
    if (auto it = env.find(var); it != env.end() && !it->second.empty()) paths.emplace_back(it->second);
  // A C compiler installed outside /usr (e.g. /opt/gcc): Triton builds its launcher with $CC (or the
  // gcc on PATH) at run time, inside the sandbox, so its installation folder must be there too.
  const auto path_it = env.find("PATH");
  const std::string path = path_it == env.end() ? "" : path_it->second;
  std::vector<std::string> compilers = {"gcc", "cc"};
  for (const char* var : {"CC", "CXX"})
    if (auto it = env.find(var); it != env.end()) compilers.push_back(it->second);
  for (const auto& compiler : compilers)
    if (auto found = find_program(compiler, path))
      if (auto prefix = toolchain_prefix(*found);
          prefix && std::find(paths.begin(), paths.end(), *prefix) == paths.end())
        paths.push_back(*prefix);
  return paths;
}

}  // namespace

WorkerSpawn worker_spawn(WorkerRole role, const EvalOptions& options, const WorkerDirs& dirs, int threads) {
  const bool candidate = role == WorkerRole::kCandidate;
  const fs::path home = candidate ? dirs.candidate : dirs.reference;
  const fs::path cache = cache_dir();
  // The shared caches exist before the sandbox is assembled: it binds only folders that exist.
  for (const char* sub : {"build", "torch_extensions", "inductor", "pycache", "pch"}) fs::create_directories(cache / sub);

  WorkerSpawn result;
  for (const auto& [name, folder] : options.target.caches) result.target_caches.push_back(folder);
  SpawnOptions& spawn = result.spawn;
  spawn.cwd = home;
  spawn.log_file = options.log_dir / (candidate ? "candidate.log" : "reference.log");
  const std::vector<std::string> worker = {options.python, "-u", "-m", "kforge_worker", "serve", "--role",
                                           candidate ? "candidate" : "reference"};
  // A wrapper (Nsight Compute under `kforge profile`) runs inside the same sandbox as the worker.
  std::vector<std::string> command = candidate ? options.candidate_wrapper : options.reference_wrapper;
  command.insert(command.end(), worker.begin(), worker.end());
  std::string& isolation = result.isolation;
  isolation = "process-group";
  if (!candidate) {
    spawn.env = worker_environment(role, options, dirs, threads, false);
    spawn.log_cap_bytes = 256ull << 20;
    spawn.argv = command;
    isolation = "none (trusted reference)";
    return result;
  }
  if (!(options.sandbox_tmp_gb > 0))
    throw InputError(fmt::format("[sandbox] tmp_gb must be a positive number of GiB, not {}", options.sandbox_tmp_gb));
  if (options.sandbox_uid && *options.sandbox_uid == 0)
    throw InputError("[sandbox] uid must not be 0: candidates never run as root");
  const auto run_as = sandbox_ids(options.sandbox_uid);
  auto bwrap = options.sandbox ? usable_bwrap() : std::nullopt;
  spawn.env = worker_environment(role, options, dirs, threads, bwrap.has_value());
  spawn.log_cap_bytes = 16ull << 20;
  if (options.target.address_space_gb > 0)
    spawn.limits.address_space_bytes = static_cast<std::uint64_t>(options.target.address_space_gb * (1ull << 30));
  const auto tmp_bytes = static_cast<std::uint64_t>(options.sandbox_tmp_gb * (1ull << 30));
  // The largest file the candidate writes is the memfd that carries a call's outputs (and the inputs
  // it changed) to the reference: as large as the problem makes them (7 GiB for KernelBench's
  // 36_RMSNorm_), bounded by memory. Its tmpfs has a size of its own; its folder is measured after
  // the evaluation (disk_breach).
  spawn.limits.file_size_bytes = std::max<std::uint64_t>(tmp_bytes, physical_memory_bytes());

  BuildBrokerSettings broker;
  broker.python = options.python;
  broker.env = spawn.env;
  for (const char* private_var : {"KFORGE_BUILD_FD", "KFORGE_LAUNCH_CACHE", "TORCHINDUCTOR_CACHE_DIR", "XDG_CACHE_HOME"})
    broker.env.erase(private_var);
  for (const auto& [name, folder] : options.target.caches) broker.env.erase(name);
  broker.env["HOME"] = broker.env["TMPDIR"] = "/tmp";
  // Precompiled torch headers of load_inline builds (kforge_worker/builder/build_pch.py): made and installed
  // by the builder, read by its sandboxed compilers.
  broker.env["KFORGE_PCH_DIR"] = (cache / "pch").string();
  // Their budget (kforge_worker/builder/pch_store.py), the builder's alone.
  const auto parent = current_environment();
  if (auto it = parent.find("KFORGE_PCH_MAX_GB"); it != parent.end()) broker.env["KFORGE_PCH_MAX_GB"] = it->second;
  // The shared build cache's budget (kforge_worker/builder/build_store.py), the builder's alone too.
  if (auto it = parent.find("KFORGE_BUILD_CACHE_MAX_GB"); it != parent.end())
    broker.env["KFORGE_BUILD_CACHE_MAX_GB"] = it->second;
  broker.work_root = home.parent_path();
  broker.timeout_s = options.target.compile_timeout_s;
  broker.prestart = calls_load_inline(options.candidate);

  if (bwrap) {
    SandboxPolicy policy;
    policy.drop_to = run_as;
    policy.tmp_bytes = tmp_bytes;
    policy.read_only = runtime_paths(options, spawn.env);
    broker.compiler_policy = policy;  // the compiler sees no cache but its headers, and no candidate folder
    broker.compiler_policy.read_only.push_back(cache / "pch");
    policy.read_only.push_back(cache / "build");
    policy.read_only.push_back(cache / "torch_extensions");
    policy.read_only.push_back(cache / "pycache");
    policy.read_only.push_back(dirs.shared);
    policy.writable = {dirs.candidate};
    for (const auto& p : wrapper_paths(options.candidate_wrapper)) policy.read_only.push_back(p);
    policy.devices = sandbox_device_nodes(options.target);
    // The sandbox binds folders where they really are: name the interpreter by its folder's real path
    // (a virtualenv linked from elsewhere), keeping its own name so that it still finds its venv.
    for (auto& word : command)
      if (word == options.python && fs::path(word).has_parent_path()) {
        std::error_code ec;
        fs::path real_dir = fs::canonical(fs::path(word).parent_path(), ec);
        if (!ec) word = (real_dir / fs::path(word).filename()).string();
      }
    spawn.argv = sandboxed_command(*bwrap, policy, command);
    result.owner = run_as;
    broker.bwrap = bwrap;
    broker.run_as = run_as;
    result.tmp_bytes = tmp_bytes;
    isolation = "bubblewrap";
  } else {
    spawn.argv = command;
    isolation = options.sandbox ? "process-group (bubblewrap unavailable)" : "process-group (--no-sandbox)";
  }
  result.broker = broker;
  return result;
}

std::unique_ptr<Subprocess> start_worker(const WorkerSpawn& how) {
  const fs::path cache = cache_dir();
  for (const auto& folder : how.target_caches) fs::create_directories(cache / folder);
  SpawnOptions spawn = how.spawn;
  fs::create_directories(spawn.cwd / "tmp");  // the worker's HOME and (without a sandbox) TMPDIR
  if (how.owner) {
    // The candidate's own folder is the only host folder it may write; its parent (the worker's
    // root, private to kforge) only needs to be passable.
    const auto [uid, gid] = *how.owner;
    for (const auto& entry : fs::recursive_directory_iterator(spawn.cwd))
      if (lchown(entry.path().c_str(), uid, gid) != 0) throw InternalError(fmt::format("chown {}", entry.path().string()));
    if (chown(spawn.cwd.c_str(), uid, gid) != 0) throw InternalError(fmt::format("chown {}", spawn.cwd.string()));
    fs::permissions(spawn.cwd.parent_path(), fs::perms::others_exec | fs::perms::group_exec, fs::perm_options::add);
  }
  std::shared_ptr<BuildBroker> broker;
  if (how.broker) {
    broker = std::make_shared<BuildBroker>(*how.broker);
    spawn.channel_fd = broker->worker_end();
  }
  auto process = Subprocess::spawn(spawn);
  if (broker) {
    broker->close_worker_end();
    process->attach(broker);
  }
  return process;
}

LaunchedWorker launch_worker(WorkerRole role, const EvalOptions& options, const WorkerDirs& dirs, int threads) {
  WorkerSpawn how = worker_spawn(role, options, dirs, threads);
  return {start_worker(how), how.isolation};
}

}  // namespace kforge
