// How a worker process is started: interpreter, allowlisted environment, limits and sandbox.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/build_broker.h"
#include "eval/eval_options.h"
#include "util/subprocess.h"

namespace kforge {

enum class WorkerRole { kReference, kCandidate };

struct WorkerDirs {
  std::filesystem::path shared;     // inputs, init inputs, weights: written by the reference, read by both
  std::filesystem::path reference;  // the reference's private directory
  std::filesystem::path candidate;  // the candidate's private directory (its HOME and outputs)
};

// Variables a worker may inherit from kforge's environment; everything else is dropped.
extern const char* const kWorkerEnvAllowlist[];

// The worker's complete environment: the allowlist, the target's [env], kforge's own settings.
// `sandboxed`: the candidate's private folders (HOME, TMPDIR, launch-time caches) are on its tmpfs.
std::map<std::string, std::string> worker_environment(WorkerRole role, const EvalOptions& options,
                                                      const WorkerDirs& dirs, int threads, bool sandboxed = false);

// Which interpreter runs the worker: --python, config worker.python, <data>/.venv (a build tree),
// $XDG_DATA_HOME/kforge/venv (an installed kforge, share/kforge/setup-worker.sh), python3.
std::string resolve_python(const std::string& from_flag, const std::string& from_config);

// The "warm" request's arguments: import torch and reach the device. `preload`: also import the
// target's [worker] preload modules; worth it only ahead of need, since for a worker wanted now it
// would delay a fast-path candidate that needs none of them.
nlohmann::json warm_args(const EvalOptions& options, int threads, bool preload);

// Everything needed to start a worker, not yet started: the pool compares these to tell whether an
// idle worker was started exactly as a new one would be.
struct WorkerSpawn {
  SpawnOptions spawn;
  std::string isolation;  // "bubblewrap" or "process-group" (with the reason bubblewrap was not used)
  std::optional<BuildBrokerSettings> broker;  // a candidate's build channel
  std::optional<std::uint64_t> tmp_bytes;     // the size of its private tmpfs, when sandboxed
  std::optional<HostIds> owner;               // the uid its own folder must belong to (kforge is root)
  std::vector<std::string> target_caches;     // the target's shared cache folders, under kforge's cache directory
};

WorkerSpawn worker_spawn(WorkerRole role, const EvalOptions& options, const WorkerDirs& dirs, int threads);

// Starts a described worker (making its directories, owned by the sandbox's uid, the shared compile
// caches and the candidate's build broker first).
std::unique_ptr<Subprocess> start_worker(const WorkerSpawn& how);

struct LaunchedWorker {
  std::unique_ptr<Subprocess> process;
  std::string isolation;  // "bubblewrap" or "process-group" (with the reason bubblewrap was not used)
};

LaunchedWorker launch_worker(WorkerRole role, const EvalOptions& options, const WorkerDirs& dirs, int threads);

}  // namespace kforge
