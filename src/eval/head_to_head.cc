#include "eval/head_to_head.h"

#include <fmt/format.h>

#include <random>

#include "eval/correctness.h"
#include "eval/memory_phase.h"
#include "eval/screening.h"
#include "eval/timing_phase.h"
#include "eval/worker_pool.h"
#include "util/environment.h"
#include "util/errors.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;

json ContenderTiming::to_json() const {
  json out = {{"timing", kforge::to_json(stats)}, {"block_medians_ms", block_medians_ms}};
  if (!status.empty()) out["status"] = status, out["error"] = error;
  return out;
}

json HeadToHead::to_json() const {
  json out = {{"a", a.to_json()},
              {"b", b.to_json()},
              {"eager", kforge::to_json(eager)},
              {"ratio_samples", ratio_samples},
              {"b_vs_a", kforge::to_json(b_vs_a)},
              {"threads", threads}};
  if (!problem_error.empty()) out["problem_error"] = problem_error;
  return out;
}

namespace {

void record(ContenderTiming& out, const EvalRun& run, const TimedFunction& timed) {
  out.stats = summarize(timed.samples_ms);
  out.block_medians_ms = timed.block_medians_ms;
  out.status = run.status;
  if (run.doc.contains("error")) out.error = run.doc["error"];
}

std::string error_message(const EvalRun& run) {
  return run.doc.contains("error") ? run.doc["error"].value("message", run.status) : run.status;
}

}  // namespace

HeadToHead time_head_to_head(EvalRun& a, EvalRun& b, EvalRun& baseline, WorkerPool& pool) {
  if (a.ref != b.ref || a.ref != baseline.ref)
    throw InternalError("a head-to-head needs both candidates checked by one reference worker");
  HeadToHead result;
  result.threads = a.threads;
  json timing = json::object();
  DeviceHold hold = hold_device_for_timing(a, pool, timing);
  CandidateTimer first(a, "a");
  CandidateTimer second(b, "b");
  BaselineTimer eager(baseline, "eager");
  time_interleaved({&first, &second, &eager}, TimingPlan::from(a.opt, a.lean_timing), [&](const std::string& what) { a.phase(what); });
  record(result.a, a, first);
  record(result.b, b, second);
  result.eager = summarize(eager.samples_ms);
  if (baseline.decided()) result.problem_error = error_message(baseline);
  const std::size_t rounds = std::min(first.block_medians_ms.size(), second.block_medians_ms.size());
  for (std::size_t i = 0; i < rounds; ++i)
    if (second.block_medians_ms[i] > 0) result.ratio_samples.push_back(first.block_medians_ms[i] / second.block_medians_ms[i]);
  if (result.complete()) result.b_vs_a = estimate_speedup(first.block_medians_ms, second.block_medians_ms);
  return result;
}

HeadToHead compare_candidates(const EvalOptions& options, const fs::path& candidate_a, const fs::path& candidate_b,
                              WorkerPool& pool, ProgressFn progress, void* user) {
  for (const fs::path& p : {options.problem, candidate_a, candidate_b})
    if (!fs::exists(p)) throw InputError(fmt::format("file not found: {}", p.string()));
  if (options.trials < 1) throw InputError("a head-to-head needs at least one trial per candidate");
  EvalOptions opt_a = options, opt_b = options, opt_ref = options;
  opt_a.candidate = candidate_a;
  opt_b.candidate = candidate_b;
  opt_a.log_dir = options.log_dir / "a";
  opt_b.log_dir = options.log_dir / "b";
  opt_ref.log_dir = options.log_dir / "reference";
  opt_ref.compile_baseline = false;  // only eager: the two candidates are what is compared
  for (const EvalOptions* o : {&opt_a, &opt_b, &opt_ref}) fs::create_directories(o->log_dir);

  EvalRun a(opt_a, progress, user), b(opt_b, progress, user), reference(opt_ref, progress, user);
  const int threads = options.threads > 0 ? options.threads : available_cpus();
  std::uint64_t seed = options.seed.value_or(std::random_device{}() % 2147483647u);
  for (EvalRun* run : {&a, &b, &reference}) {
    run->threads = threads;
    run->seed = seed;
    run->doc["checks"] = json::array();
    run->doc["notes"] = json::array();
  }

  HeadToHead result;
  result.threads = threads;
  WorkerPair pair_a, pair_b;
  a.phase("starting workers");
  take_workers(a, pool, pair_a, true);
  take_workers(b, pool, pair_b, false);
  b.ref = reference.ref = a.ref;
  b.reference_shared = reference.reference_shared = a.dirs.shared;
  reference.dirs = a.dirs;
  fs::copy_file(candidate_a, a.candidate_file());
  fs::copy_file(candidate_b, b.candidate_file());

  json problem_reply;
  json timing = json::object();
  bool with_compile = false;
  // Three processes on the device: the reference and both candidates.
  std::optional<MemoryTicket> memory;
  bool ready = worker_ready(reference, *pair_a.ref);
  if (ready) {
    if (auto ticket = reserve_device_memory(reference, 3, false)) memory.emplace(std::move(*ticket));
    else ready = false;
  }
  ready = ready && load_problem(reference, json(options.overrides), "main", &problem_reply);
  a.lean_timing = b.lean_timing = reference.lean_timing = problem_reply.value("lean_timing", false);
  if (ready) {
    for (auto [run, worker] : {std::pair{&a, pair_a.cand.get()}, std::pair{&b, pair_b.cand.get()}}) {
      run->phase(fmt::format("loading candidate {}", run == &a ? "a" : "b"));
      ready = worker_ready(*run, *worker) && load_candidate(*run, problem_reply) &&
              run_trials(*run, "main", options.trials, true) && prepare_candidate_timing(*run, timing);
      if (!ready) break;
    }
    // The baseline runs on the input sets the candidates run on, swapped the same way.
    reference.timing_trials = a.timing_trials;
    reference.timing_sets = a.timing_sets;
    ready = ready && prepare_reference_timing(reference, timing, &with_compile);
  }
  if (ready) {
    result = time_head_to_head(a, b, reference, pool);
  } else {
    for (const EvalRun* run : {&reference, &a, &b})
      if (run->status == status::kProblemError) result.problem_error = error_message(*run);
    for (auto [run, out] : {std::pair{&a, &result.a}, std::pair{&b, &result.b}}) {
      out->status = run->status;
      if (run->doc.contains("error")) out->error = run->doc["error"];
    }
  }
  a.ref = b.ref = reference.ref = a.cand = b.cand = nullptr;
  const bool reference_fine = result.problem_error.empty() && a.status != status::kProblemError &&
                              b.status != status::kProblemError;
  pool.give_back(std::move(pair_b), false, options.reference_timeout_s);
  pool.give_back(std::move(pair_a), reference_fine, options.reference_timeout_s);
  if (memory) memory->release();
  return result;
}

}  // namespace kforge
