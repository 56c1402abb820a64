#include "eval/worker_pool.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <regex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "util/file_tree.h"
#include "util/files.h"
#include "util/hash.h"
#include "util/paths.h"
#include "util/sandbox.h"
#include "util/sandbox_limits.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

namespace {

// A kept reference is retired after this many evaluations, bounding whatever a long-lived
// interpreter accumulates (compiled graphs, allocator fragmentation).
constexpr int kReferenceEvaluations = 100;
// How long a worker may take to import torch and initialise the device.
constexpr double kWarmTimeoutS = 300;

// Whether `pid` is a running process. Any process counts, whatever its name: kforge's library also runs
// inside test binaries and other programs, and a folder of a live owner must never go. A pid reused by
// another program only keeps a stale folder until that program ends.
bool process_running(long pid) { return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

std::filesystem::path temp_root() {
  const char* tmp = std::getenv("TMPDIR");
  return tmp && *tmp ? fs::path(tmp) : fs::path("/tmp");
}

}  // namespace

int remove_stale_worker_dirs(const fs::path& temp_dir) {
  static const std::regex pattern(R"(kforge-(eval|ref)-(\d+)-\w+)");
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(temp_dir, ec)) {
    std::smatch m;
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, m, pattern) || entry.is_symlink() || !entry.is_directory()) continue;
    const long owner = std::stol(m[2].str());
    if (owner == getpid() || process_running(owner)) continue;
    // Descriptor-based: a tree deeper than a path may be named goes too.
    if (remove_tree(entry.path())) ++removed;
  }
  return removed;
}

std::optional<std::string> PooledWorker::disk_breach() const {
  if (!tmp_bytes || !client) return std::nullopt;
  // A full tmpfs: what the candidate wrote was stopped by the size limit.
  if (auto usage = sandbox_tmp_usage(client->process().pid());
      usage && usage->used_bytes + (1u << 20) >= usage->size_bytes)
    return fmt::format("the candidate filled its private /tmp ({} MiB, [sandbox] tmp_gb)", usage->size_bytes >> 20);
  // Walked by descriptor (file_tree.h): nesting deeper than a path may be named hides nothing.
  const TreeSize written = measure_tree(home, kSandboxInodes);
  if (written.entries > kSandboxInodes)
    return fmt::format("the candidate made more than {} files and folders in its folder (the inode quota its /tmp "
                       "has too)",
                       kSandboxInodes);
  if (written.bytes > *tmp_bytes)
    return fmt::format("the candidate wrote {} MiB into its folder, more than its {} MiB quota ([sandbox] tmp_gb)",
                       written.bytes >> 20, *tmp_bytes >> 20);
  return std::nullopt;
}

std::string worker_pool_key(WorkerRole role, const EvalOptions& options, int threads) {
  const WorkerDirs placeholders{"/kforge-pool/shared", "/kforge-pool/reference", "/kforge-pool/candidate"};
  SpawnOptions s = worker_spawn(role, options, placeholders, threads).spawn;
  json key = {{"argv", s.argv},
              {"env", s.env},
              {"cwd", s.cwd.string()},
              {"limits", {s.limits.address_space_bytes, s.limits.file_size_bytes, s.limits.open_files, s.limits.memory_bytes}},
              {"log_cap", s.log_cap_bytes},
              {"warm", warm_args(options, threads, true)}};
  // A reference is reset between evaluations but keeps its interpreter: a problem that changed a
  // global of torch's when imported must not reach another problem.
  if (role == WorkerRole::kReference)
    key["problem"] = {fs::absolute(options.problem).string(), sha256_hex(read_file(options.problem))};
  return sha256_hex(key.dump());
}

PooledWorker::~PooledWorker() {
  if (client) client->shutdown();
  if (!root.empty() && !remove_tree(root)) spdlog::warn("could not remove the worker folder {}", root.string());
}

bool PooledWorker::wait_ready() {
  if (preparing) {
    WorkerReply r = client->wait(*preparing);
    preparing.reset();
    if (r.kind != WorkerReply::kOk) start_failure = r;
  }
  return !start_failure;
}

WorkerDirs WorkerPair::dirs() const {
  WorkerDirs d;
  if (cand) d.shared = cand->shared, d.candidate = cand->home;
  if (ref) d.reference = ref->home;
  return d;
}

json WorkerPair::describe() const {
  json j = {{"waited_seconds", waited_seconds}};
  if (ref) j["reference"] = {{"origin", ref->origin}, {"evaluation", ref->evaluations}};
  if (cand) j["candidate"] = {{"origin", cand->origin}};
  return j;
}

WorkerPool::WorkerPool(int spare_candidates, StartAhead when) : spare_candidates_(spare_candidates), when_(when) {
  // Once per kforge process: folders of crashed runs go before new ones are made.
  static std::once_flag swept;
  std::call_once(swept, [] {
    if (int n = remove_stale_worker_dirs(temp_root()))
      spdlog::info("removed {} worker folder(s) left by kforge processes that are no longer running", n);
  });
}

WorkerPool::~WorkerPool() {
  std::vector<std::unique_ptr<PooledWorker>> idle;
  {
    std::lock_guard lock(mutex_);
    idle.swap(idle_);
    held_starts_.clear();
  }
  for (auto& w : idle) retire(std::move(w));
  for (auto& t : retiring_) t.join();
}

std::unique_ptr<PooledWorker> WorkerPool::start(WorkerRole role, const EvalOptions& options, int threads,
                                                const std::string& key, bool ahead) {
  const bool candidate = role == WorkerRole::kCandidate;
  auto worker = std::make_unique<PooledWorker>();
  // The owner's pid in the name: a later kforge removes the folder if this process dies without doing so.
  worker->root = make_temp_dir(fmt::format("{}{}-", candidate ? "kforge-eval-" : "kforge-ref-", getpid()));
  worker->home = worker->root / (candidate ? "candidate" : "reference");
  WorkerDirs dirs;
  if (candidate) {
    worker->shared = worker->root / "shared";
    fs::create_directories(worker->shared);
    dirs = {worker->shared, "", worker->home};
  } else {
    dirs = {"", worker->home, ""};
  }
  fs::create_directories(worker->home);
  WorkerSpawn how = worker_spawn(role, options, dirs, threads);
  how.spawn.log_file = worker->root / "start.log";  // until an evaluation takes it
  worker->isolation = how.isolation;
  worker->tmp_bytes = how.tmp_bytes;
  worker->origin = ahead ? "started ahead" : "started";
  worker->key = key;
  if (!candidate) worker->problem = fs::absolute(options.problem);
  worker->client = std::make_unique<WorkerClient>(candidate ? "candidate" : "reference", start_worker(how));
  worker->preparing = worker->client->send("warm", warm_args(options, threads, ahead), Seconds(kWarmTimeoutS));
  return worker;
}

std::unique_ptr<PooledWorker> WorkerPool::take_one(WorkerRole role, const EvalOptions& options, int threads) {
  const std::string key = worker_pool_key(role, options, threads);
  std::unique_ptr<PooledWorker> worker;
  {
    std::lock_guard lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end(); ++it)
      if ((*it)->key == key) {
        worker = std::move(*it);
        idle_.erase(it);
        break;
      }
  }
  // One from the pool that died while it waited (or never got ready) is replaced, not handed out.
  if (worker && (!worker->wait_ready() || !worker->client->alive())) {
    spdlog::debug("a pooled {} worker was not usable; starting a new one", worker->client->role());
    retire(std::move(worker));
  }
  if (!worker) worker = start(role, options, threads, key, false);
  if (role == WorkerRole::kCandidate && when_ == StartAhead::kWhenEvaluationBegins) start_ahead(options, threads, key);
  worker->client->process().log_to(options.log_dir / (role == WorkerRole::kCandidate ? "candidate.log" : "reference.log"));
  ++worker->evaluations;
  return worker;
}

void WorkerPool::start_ahead(const EvalOptions& options, int threads, const std::string& key) {
  if (spare_candidates_ <= 0) return;
  auto launch = [this, options, threads, key] {
    auto worker = start(WorkerRole::kCandidate, options, threads, key, true);
    std::lock_guard lock(mutex_);
    idle_.push_back(std::move(worker));
  };
  {
    std::lock_guard lock(mutex_);
    int spare = 0;
    for (const auto& w : idle_) spare += w->key == key;
    if (spare >= spare_candidates_) return;
    if (quiet_ > 0) {
      held_starts_.push_back(launch);
      return;
    }
  }
  launch();
}

WorkerPair WorkerPool::take(const EvalOptions& options, int threads, bool with_reference) {
  auto started = Clock::now();
  WorkerPair pair;
  pair.options = options;
  pair.threads = threads;
  if (with_reference) pair.ref = take_one(WorkerRole::kReference, options, threads);
  pair.cand = take_one(WorkerRole::kCandidate, options, threads);
  pair.waited_seconds = Seconds(Clock::now() - started).count();
  return pair;
}

void WorkerPool::give_back(WorkerPair pair, bool reference_reusable, double reference_timeout_s) {
  if (pair.cand) {
    const std::string key = pair.cand->key;
    retire(std::move(pair.cand));
    if (when_ == StartAhead::kWhenEvaluationEnds && pair.options) start_ahead(*pair.options, pair.threads, key);
  }
  if (!pair.ref) return;
  auto& ref = pair.ref;
  const bool keep = reference_reusable && !ref->preparing && !ref->start_failure && ref->client->alive() &&
              ref->evaluations < kReferenceEvaluations;
  if (!keep) {
    retire(std::move(ref));
    return;
  }
  // Read by the next take(), like a new worker's "warm": a reference that fails it is replaced then.
  // Replies to requests the evaluation abandoned come first and are skipped by the id match.
  ref->preparing = ref->client->send("reset", json::object(), Seconds(reference_timeout_s));
  ref->client->process().log_to(ref->root / "idle.log");
  ref->origin = "kept from an earlier evaluation";
  std::lock_guard lock(mutex_);
  idle_.push_back(std::move(ref));
}

void WorkerPool::release_references(const fs::path& problem) {
  const fs::path absolute = fs::absolute(problem);
  std::vector<std::unique_ptr<PooledWorker>> released;
  {
    std::lock_guard lock(mutex_);
    for (auto it = idle_.begin(); it != idle_.end();) {
      if ((*it)->problem.empty() || (*it)->problem != absolute) {
        ++it;
        continue;
      }
      released.push_back(std::move(*it));
      it = idle_.erase(it);
    }
  }
  for (auto& w : released) retire(std::move(w));
}

void WorkerPool::retire(std::unique_ptr<PooledWorker> worker) {
  if (!worker) return;
  // Killing waits for the process (and its device context) to go; nobody needs to wait for that.
  std::thread t([w = std::move(worker)]() mutable { w.reset(); });
  std::vector<std::thread> done;
  {
    std::lock_guard lock(mutex_);
    // Threads of earlier retirements have long finished by now; collect them now and then.
    if (retiring_.size() >= 16) done.swap(retiring_);
    retiring_.push_back(std::move(t));
  }
  for (auto& d : done) d.join();
}

WorkerPool::Quiet WorkerPool::quiet() {
  std::vector<std::unique_ptr<PooledWorker>> starting;
  {
    std::lock_guard lock(mutex_);
    ++quiet_;
    for (auto it = idle_.begin(); it != idle_.end();) {
      if (!(*it)->preparing) {
        ++it;
        continue;
      }
      starting.push_back(std::move(*it));
      it = idle_.erase(it);
    }
  }
  for (auto& w : starting) w->wait_ready();
  {
    std::lock_guard lock(mutex_);
    for (auto& w : starting) idle_.push_back(std::move(w));
  }
  return Quiet(this);
}

void WorkerPool::end_quiet() {
  std::vector<std::function<void()>> held;
  {
    std::lock_guard lock(mutex_);
    if (--quiet_ > 0) return;
    held.swap(held_starts_);
  }
  for (auto& start : held) start();
}

WorkerPool::Quiet::~Quiet() {
  if (pool_) pool_->end_quiet();
}

}  // namespace kforge
