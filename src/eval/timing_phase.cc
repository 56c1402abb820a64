#include "eval/timing_phase.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <thread>

#include "eval/device_state.h"
#include "eval/verdict.h"
#include "util/paths.h"

namespace kforge {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

namespace {
void crosscheck_backoff(int retry) {
  // A stall from outside (CPU load, another process's kernels holding the GPU) usually passes within
  // a second; waiting longer before each re-measurement lets it pass without giving a cheat anything.
  std::this_thread::sleep_for(std::chrono::milliseconds(250 * retry * retry));
}

// The slowest of three no-op round trips to the reference worker, taken now: the delay a busy
// machine adds to any request (waking the worker, then kforge). The reference is kforge's own
// trusted process, so a candidate has no say in this figure. 0 when the reference does not answer.
double machine_round_trip_ms(EvalRun& run) {
  double slowest = 0;
  for (int i = 0; i < 3; ++i) {
    WorkerReply r = run.ref->request("ping", json::object(), Seconds(run.opt.reference_timeout_s));
    if (r.kind != WorkerReply::kOk) return 0;
    slowest = std::max(slowest, r.wall_ms);
  }
  return slowest;
}

// crosscheck_block for one timed reply. A block that looks under-reported is judged again with the
// machine's round-trip delay, measured right after it, taken off kforge's clock. `record` gets the
// figures.
std::optional<std::string> crosscheck_reply(EvalRun& run, double reported_ms, const WorkerReply& reply, int reps,
                                            double untimed_ms, json& record) {
  record = {{"reported_ms", reported_ms}, {"wall_ms", reply.wall_ms}, {"untimed_ms", untimed_ms}};
  std::optional<std::string> why = crosscheck_block(reported_ms, reply.wall_ms, reps, untimed_ms);
  if (!why) return why;
  const double round_trip_ms = machine_round_trip_ms(run);
  record["round_trip_ms"] = round_trip_ms;
  return crosscheck_block(reported_ms, reply.wall_ms, reps, untimed_ms, round_trip_ms);
}

// The block's floor on kforge's clock (clock_floor.h), with the machine's round-trip delay taken off
// where the block is below it without (measured then, or already for the loose check). Recorded.
ClockFloor block_floor(EvalRun& run, double reported_ms, const WorkerReply& reply, int reps, double untimed_ms,
                       double untimed_per_rep_ms, json& record) {
  double round_trip_ms = record.value("round_trip_ms", 0.0);
  ClockFloor f = clock_floor(reported_ms, untimed_ms, reply.wall_ms, round_trip_ms, reps, untimed_per_rep_ms);
  if (f.below() && !record.contains("round_trip_ms")) {
    round_trip_ms = machine_round_trip_ms(run);
    record["round_trip_ms"] = round_trip_ms;
    f = clock_floor(reported_ms, untimed_ms, reply.wall_ms, round_trip_ms, reps, untimed_per_rep_ms);
  }
  record["floor_ms"] = f.floor_ms;
  record["explained_ms"] = f.explained_ms;
  record["reject_floor_ms"] = f.reject_floor_ms;
  if (f.below()) record["below_floor"] = true;
  if (f.far_below()) record["far_below_floor"] = true;
  if (!f.judged()) record["too_short_to_judge"] = true;
  return f;
}

// The trusted measure of one repetition's untimed work, where the reference's prepare_timing gave one.
double untimed_bound(const json& timing) {
  return timing.contains("untimed_ms_per_rep") && timing["untimed_ms_per_rep"].is_number()
             ? timing["untimed_ms_per_rep"].get<double>()
             : -1.0;
}
}  // namespace

std::optional<std::string> crosscheck_block(double reported_sum_ms, double wall_ms, int reps, double untimed_ms,
                                            double round_trip_ms) {
  // Slack for the pipe round trip, JSON and Python call overhead around the timed region.
  const double slack_ms = 5.0 + 0.5 * reps;
  if (reported_sum_ms > wall_ms * 1.02 + 1.0)
    return fmt::format(
        "the candidate reported {:.3f} ms for {} repetitions, but only {:.3f} ms passed on kforge's clock",
        reported_sum_ms, reps, wall_ms);
  if (reported_sum_ms + std::max(untimed_ms, 0.0) < 0.5 * (wall_ms - std::max(round_trip_ms, 0.0)) - slack_ms)
    return fmt::format(
        "the candidate reported {:.3f} ms for {} repetitions, but {:.3f} ms passed on kforge's clock{} "
        "(its timer does not measure what it runs)",
        reported_sum_ms, reps, wall_ms,
        round_trip_ms > 0 ? fmt::format(", {:.3f} ms of them the machine's round-trip delay", round_trip_ms) : "");
  return std::nullopt;
}

bool TimedFunction::time_block(int reps, bool keep) {
  std::optional<std::vector<double>> times = measure(reps, keep);
  if (!times) return false;
  if (keep) {
    samples_ms.insert(samples_ms.end(), times->begin(), times->end());
    block_medians_ms.push_back(summarize(*times).median_ms);
  }
  return true;
}

std::optional<std::vector<double>> CandidateTimer::measure(int reps, bool keep) {
  // The schedule is drawn here and sent with the block; which repetitions get checked is drawn only
  // after the block returned.
  const std::vector<int> schedule = run_.sampler.schedule(reps, run_.timing_sets);
  // A block whose reported time disagrees with kforge's clock is measured again (up to twice per
  // run) before the candidate is rejected: a busy machine can stall one block, a cheat fails every time.
  for (;;) {
    WorkerReply r =
        run_.cand->request("time", {{"reps", reps}, {"schedule", schedule}}, Seconds(run_.opt.timeout_s));
    if (r.kind != WorkerReply::kOk) {
      run_.fail_from_candidate(r, "timing");
      return std::nullopt;
    }
    const TimedBlockReply block = TimedBlockReply::decode(r.body);
    if (static_cast<int>(block.times_ms.size()) != reps) {
      run_.fail(status::kRejected, "timing_crosscheck", "the candidate process reported the wrong number of timings");
      run_.add_check("timing_crosscheck", "fail", "wrong number of timings reported");
      return std::nullopt;
    }
    double sum = 0;
    for (double t : block.times_ms) sum += t;
    json record;
    if (auto why = crosscheck_reply(run_, sum, r, reps, block.untimed_ms, record)) {
      if (++crosscheck_retries_ <= 2) {
        record["remeasured"] = true;
        crosschecks.push_back(record);
        crosscheck_backoff(crosscheck_retries_);
        continue;
      }
      run_.add_check("timing_crosscheck", "fail", *why);
      run_.fail(status::kRejected, "timing_crosscheck", *why);
      return std::nullopt;
    }
    // No reported time faster than kforge's clock allows: a candidate far below its floor in most
    // blocks is rejected (reject_verdict), one below it in every block warned of (floor_verdict).
    // A block below it is recorded but its times are not raised: the
    // cached-results rule compares the calls on seen sets as reported, and raising a loaded machine's
    // blocks hid a content cache's fast hits there.
    ClockFloor floor = block_floor(run_, sum, r, reps, block.untimed_ms, untimed_per_rep_ms, record);
    // Far below where the trusted measure of the untimed work was taken on a quieter machine: the
    // reference measures it again now, under the same load (it only ever raises the bound).
    if (keep && floor.far_below() && untimed_per_rep_ms >= 0 && untimed_remeasures_ < kMaxUntimedRemeasures) {
      ++untimed_remeasures_;
      WorkerReply now = run_.ref->request("untimed_cost", json::object(), Seconds(run_.opt.reference_timeout_s));
      const double measured = now.kind == WorkerReply::kOk ? now.body.value("untimed_ms_per_rep", -1.0) : -1.0;
      if (measured > untimed_per_rep_ms) {
        untimed_per_rep_ms = measured;
        record["untimed_ms_per_rep_now"] = measured;
        floor = block_floor(run_, sum, r, reps, block.untimed_ms, untimed_per_rep_ms, record);
      }
    }
    // A kept block far below its floor is checked like any other, then timed again (at most
    // kMaxFloorRemeasures per run, after a backoff): a stall from outside passes, a forged timer is
    // far below every time and the blocks kept decide (reject_verdict).
    const bool remeasure = keep && floor.far_below() && floor_remeasures_ < kMaxFloorRemeasures;
    if (!keep) record["warmup"] = true;  // not among the blocks the floor judges
    if (remeasure) record["remeasured"] = true;
    crosschecks.push_back(record);
    if (!judge_timing_reply(run_, block)) return std::nullopt;
    if (keep) {
      const std::vector<int> picks = run_.sampler.picks(reps, kCheckedRepsPerBlock);
      std::vector<int> trials;
      for (int rep : picks)
        trials.push_back(run_.timing_trials[static_cast<std::size_t>(schedule[static_cast<std::size_t>(rep)])]);
      if (!verify_timed_reps(run_, picks, trials)) return std::nullopt;
    }
    if (remeasure) {
      crosscheck_backoff(++floor_remeasures_);
      continue;
    }
    if (keep) {
      floors.push_back(floor);
      run_.timed_reps_kept += reps;
    }
    return block.times_ms;
  }
}

std::optional<std::vector<double>> BaselineTimer::measure(int reps, bool) {
  WorkerReply r = run_.ref->request(
      "time", {{"which", name()}, {"reps", reps}, {"schedule", sampler_.schedule(reps, run_.timing_sets)}},
      Seconds(run_.opt.reference_timeout_s));
  if (r.kind != WorkerReply::kOk) {
    run_.fail_from_reference(r, fmt::format("timing the {} baseline", name()));
    return std::nullopt;
  }
  TimedBlockReply block = TimedBlockReply::decode(r.body);
  if (static_cast<int>(block.times_ms.size()) != reps) {
    run_.fail_from_reference(r, "timing");
    return std::nullopt;
  }
  if (block.device_state) device_states.push_back(*block.device_state);
  return block.times_ms;
}

bool time_interleaved(const std::vector<TimedFunction*>& functions, const TimingPlan& plan,
                      const std::function<void(const std::string&)>& phase) {
  phase("warm-up");
  for (TimedFunction* f : functions)
    if (!f->time_block(plan.warmup, false)) return false;
  const int rounds = plan.rounds();
  for (int round = 0; round < rounds; ++round) {
    phase(fmt::format("timing round {}/{}", round + 1, rounds));
    const int reps = std::min(plan.block, plan.reps - round * plan.block);
    for (std::size_t k = 0; k < functions.size(); ++k)
      if (!functions[(k + static_cast<std::size_t>(round)) % functions.size()]->time_block(reps, true)) return false;
  }
  return true;
}

DeviceHold hold_device_for_timing(EvalRun& run, WorkerPool& pool, json& timing) {
  // No worker of the pool starts while this one measures; then one measurement per GPU at a time,
  // across processes, while builds and trials of others go on.
  auto quiet_from = Clock::now();
  DeviceHold hold{pool.quiet(), std::nullopt};
  if (double waited = Seconds(Clock::now() - quiet_from).count(); waited > 0.001)
    timing["waited_for_worker_start_seconds"] = waited;  // a worker started ahead was still starting
  hold.lock = DeviceLock::acquire(run.opt.device, run.opt.target.device_lock, state_dir() / "locks", [&](const fs::path& path) {
    run.phase(fmt::format("waiting for {} (another evaluation is timing on this GPU)", path.filename().string()));
  });
  if (hold.lock)
    timing["device_lock"] = {{"path", hold.lock->path().string()}, {"waited_seconds", hold.lock->waited_seconds()}};
  return hold;
}

bool prepare_reference_timing(EvalRun& run, json& timing, bool* with_compile) {
  WorkerReply rp = run.ref->request(
      "prepare_timing", {{"trial", 0}, {"compile_baseline", run.opt.compile_baseline}, {"sets", run.timing_trials}},
      Seconds(run.opt.reference_timeout_s));
  if (rp.kind != WorkerReply::kOk) {
    run.fail_from_reference(rp, "preparing the baselines");
    return false;
  }
  run.reference_mutates_inputs = rp.body.value("mutates_inputs", false);
  timing["reference_timer"] = rp.body["timer"];
  const bool compile_failed = rp.body.contains("compile_error");
  *with_compile = run.opt.compile_baseline && !compile_failed;
  if (compile_failed) timing["compile_error"] = rp.body["compile_error"];
  if (rp.body.contains("compile_seconds")) timing["compile_baseline_seconds"] = rp.body["compile_seconds"];
  if (rp.body.contains("untimed_ms_per_rep")) timing["untimed_ms_per_rep"] = rp.body["untimed_ms_per_rep"];
  return true;
}

bool prepare_candidate_timing(EvalRun& run, json& timing) {
  auto inputs_of = [&](int trial) { return fmt::format("inputs_main_{}", trial); };
  run.timing_trials.clear();
  const int sets = run.lean_timing ? kLeanTimingSets : 3;
  for (int k = 0; k < std::min(run.correctness.trials_passed, sets); ++k) run.timing_trials.push_back(k);
  for (int extra = 2000; run.timing_trials.size() < 2; ++extra) {
    WorkerReply made = run.ref->request("make_trial", {{"trial", extra}, {"seed", run.seed}, {"tag", "main"}},
                                        Seconds(run.opt.reference_timeout_s));
    if (made.kind != WorkerReply::kOk) {
      run.fail_from_reference(made, "drawing inputs for timing");
      return false;
    }
    run.timing_trials.push_back(extra);
  }
  run.timing_sets = static_cast<int>(run.timing_trials.size());
  json input_sets = json::array();
  for (int trial : run.timing_trials) input_sets.push_back(inputs_of(trial));
  WorkerReply cp = run.cand->request("prepare_timing",
                                     {{"inputs", inputs_of(run.timing_trials[0])}, {"input_sets", input_sets}, {"lean", run.lean_timing}},
                                     Seconds(run.opt.timeout_s));
  if (cp.kind != WorkerReply::kOk) {
    run.fail_from_candidate(cp, "preparing timing");
    return false;
  }
  timing["candidate_timer"] = cp.body["timer"];
  return true;
}

bool judge_timing_reply(EvalRun& run, const TimedBlockReply& reply) {
  json findings = json::array();
  for (const auto& [name, what] : reply.events)
    if (name != "dynamic_code" && name != "native_loading")
      findings.push_back({{"name", name}, {"verdict", "fail"}, {"message", fmt::format("during timed calls: {}", what)}});
  if (!reply.tampered.empty())
    findings.push_back({{"name", "monkey_patching"}, {"verdict", "fail"},
                        {"message", fmt::format("during timed calls the candidate replaced {}", reply.tampered.dump())}});
  if (reply.inputs_changed_count > 0 && !run.reference_mutates_inputs)
    findings.push_back({{"name", "input_mutation"}, {"verdict", "fail"},
                        {"message", fmt::format("{} timed calls changed their inputs (repetitions {} of a block), where "
                                                "the reference leaves its own alone",
                                                reply.inputs_changed_count, fmt::join(reply.inputs_changed, ", "))}});
  if (!reply.new_output_types.empty())
    findings.push_back({{"name", "output_type"}, {"verdict", "fail"},
                        {"message", fmt::format("timed calls returned {}, which no correctness run returned: work done "
                                                "when the result is read, after the timer stopped",
                                                fmt::join(reply.new_output_types, ", "))}});
  return run.apply_findings(findings);
}

bool verify_timed_reps(EvalRun& run, const std::vector<int>& reps, const std::vector<int>& trials) {
  json picks = json::array();
  std::vector<std::string> names;
  for (std::size_t i = 0; i < reps.size(); ++i) {
    names.push_back(run.output_name(fmt::format("timed_rep_{}", run.timed_reps_checked + static_cast<int>(i))));
    picks.push_back({{"rep", reps[i]}, {"outputs", names.back()}});
  }
  WorkerReply w = run.cand->request("timing_outputs", {{"picks", picks}}, Seconds(run.opt.timeout_s));
  if (w.kind != WorkerReply::kOk) {
    run.fail_from_candidate(w, "writing the outputs of timed repetitions");
    return false;
  }
  for (std::size_t i = 0; i < reps.size(); ++i) {
    WorkerReply c = run.ref->request(
        "check", {{"trial", trials[i]}, {"candidate_outputs", names[i]}, {"timing", true}},
        Seconds(run.opt.reference_timeout_s));
    const bool ok = c.kind == WorkerReply::kOk;
    if (!ok && run.reference_at_fault(c)) {
      run.fail_from_reference(c, fmt::format("checking the output of timed repetition {}", reps[i]));
      return false;
    }
    const CheckReply checked = ok ? CheckReply::decode(c.body) : CheckReply{};
    if (!ok || !checked.match) {
      std::string why = ok ? checked.mismatch_message : reply_message(c);
      std::string msg = fmt::format("the output of timed repetition {} (inputs of trial {}) is wrong ({}): a timed call "
                                    "returned another call's result or skipped work", reps[i], trials[i], why);
      merge_check(run.doc["checks"], {{"name", "timed_output"}, {"verdict", "fail"}, {"message", msg}});
      run.fail(status::kRejected, "timed_output", msg);
      return false;
    }
  }
  run.timed_reps_checked += static_cast<int>(reps.size());
  return true;
}

namespace {

// The input sets of one block on a fresh set (docs/checks.md, cached results): first a timing block's
// calls on sets the candidate has seen, drawn as every timing block's are (nothing tells them from the
// calls its speed is measured on), then the fresh set `fresh`'s first call. Lean timing keeps two sets
// on the device at most: set `seen` twice, then the fresh set.
std::vector<int> fresh_block_schedule(EvalRun& run, int seen, int fresh) {
  std::vector<int> schedule = run.lean_timing ? std::vector<int>{seen, seen}
                                              : run.sampler.schedule(fresh_block_calls(run.opt.block) - 1, run.timing_sets);
  schedule.push_back(fresh);
  return schedule;
}

// Times one block on a fresh input set drawn as `trial`, the way timing blocks run. Adds the block's
// calls to `out`; the fresh call's output and one other, picked after the
// block returned, are checked. False once the run is decided. A block whose reported time disagrees
// with kforge's clock is measured again on another fresh set (twice at most): a busy host can stall
// one block, and the set it ran on is no longer fresh.
bool time_fresh_set(EvalRun& run, int trial, int seen_set, FreshRound* out) {
  for (int attempt = 0;; ++attempt) {
    const int drawn = trial + 100 * attempt;
    WorkerReply made = run.ref->request("make_trial", {{"trial", drawn}, {"seed", run.seed}, {"tag", "main"}},
                                        Seconds(run.opt.reference_timeout_s));
    if (made.kind != WorkerReply::kOk) {
      run.fail_from_reference(made, "drawing fresh inputs");
      return false;
    }
    WorkerReply in = run.cand->request("timing_inputs", {{"path", TrialInputs::decode(made.body).inputs}},
                                       Seconds(run.opt.timeout_s));
    if (in.kind != WorkerReply::kOk) {
      run.fail_from_candidate(in, "timing on fresh inputs");
      return false;
    }
    const std::vector<int> schedule = fresh_block_schedule(run, seen_set, in.body.value("set", -1));
    const int reps = static_cast<int>(schedule.size());
    WorkerReply r = run.cand->request("time", {{"reps", reps}, {"schedule", schedule}}, Seconds(run.opt.timeout_s));
    if (r.kind != WorkerReply::kOk) {
      run.fail_from_candidate(r, "timing on fresh inputs");
      return false;
    }
    const TimedBlockReply block = TimedBlockReply::decode(r.body);
    if (static_cast<int>(block.times_ms.size()) != reps) {
      run.fail(status::kRejected, "timing_crosscheck", "timing on fresh inputs: the wrong number of timings reported");
      return false;
    }
    double reported = 0;
    for (double t : block.times_ms) reported += t;
    json record;
    if (auto why = crosscheck_reply(run, reported, r, reps, block.untimed_ms, record)) {
      if (attempt < 2) {
        crosscheck_backoff(attempt + 1);
        continue;
      }
      run.fail(status::kRejected, "timing_crosscheck", "timing on fresh inputs disagrees with kforge's clock: " + *why);
      return false;
    }
    block_floor(run, reported, r, reps, block.untimed_ms, untimed_bound(run.doc.value("timing", json::object())), record);
    const int fresh_rep = reps - 1;
    const int seen_rep = run.sampler.picks(fresh_rep, 1).front();
    const int seen_trial = run.timing_trials[static_cast<std::size_t>(schedule[static_cast<std::size_t>(seen_rep)])];
    if (!judge_timing_reply(run, block) || !verify_timed_reps(run, {seen_rep, fresh_rep}, {seen_trial, drawn}))
      return false;
    out->blocks_ms.push_back(block.times_ms);
    return true;
  }
}

}  // namespace

bool time_on_fresh_inputs(EvalRun& run, int sets, FreshTiming* out) {
  const auto started = Clock::now();
  FreshTiming measured = run.fresh.value_or(FreshTiming{});
  FreshRound round;
  for (int j = 0; j < sets; ++j) {
    const int index = static_cast<int>(measured.rounds.size()) * sets + j;
    if (!time_fresh_set(run, 1000 + index, index % std::max(run.timing_sets, 1), &round)) return false;
  }
  measured.rounds.push_back(round);
  measured.fresh_ms = summarize(measured.fresh_calls_ms()).median_ms;
  measured.again_ms = summarize(measured.seen_calls_ms()).median_ms;
  measured.seconds += Seconds(Clock::now() - started).count();
  run.fresh = measured;
  *out = measured;
  return true;
}

std::optional<TimingOutcome> time_candidate(EvalRun& run, WorkerPool& pool) {
  run.phase("preparing timing");
  json timing = json::object();
  timing["threads"] = run.threads;
  timing["unit"] = "ms";
  timing["warmup"] = run.opt.warmup;
  timing["block"] = run.opt.block;
  bool with_compile = false;
  // The document keeps what was prepared even when a later step fails.
  auto keep = [&](bool ok) {
    run.doc["timing"].update(timing);
    return ok;
  };
  // The candidate's side first: it settles the input sets, which the baselines are timed on too.
  if (!keep(prepare_candidate_timing(run, timing))) return std::nullopt;
  if (!keep(prepare_reference_timing(run, timing, &with_compile))) return std::nullopt;

  CandidateTimer candidate(run);
  candidate.untimed_per_rep_ms = untimed_bound(timing);
  BaselineTimer eager(run, "eager");
  BaselineTimer compile(run, "compile");
  std::vector<TimedFunction*> order = {&candidate, &eager};
  if (with_compile) order.push_back(&compile);

  DeviceHold hold = hold_device_for_timing(run, pool, timing);
  keep(true);
  if (!time_interleaved(order, TimingPlan::from(run.opt, run.lean_timing), [&](const std::string& what) { run.phase(what); }))
    return std::nullopt;

  // Rejected where most judged blocks hide far more than an honest request costs (a forged timer);
  // only warned of where every block is a little short: an honest GPU kernel with large untimed work
  // between its repetitions fell 7.5% below a stricter floor in every block (clock_floor.h).
  if (auto why = reject_verdict(candidate.floors)) {
    run.doc["timing"]["crosscheck"] = candidate.crosschecks;
    run.add_check("timing_crosscheck", "fail", *why);
    run.fail(status::kRejected, "timing_crosscheck", *why);
    return std::nullopt;
  }
  if (auto why = floor_verdict(candidate.floors)) {
    run.doc["timing"]["crosscheck"] = candidate.crosschecks;
    run.add_check("timing_crosscheck", "warn", *why);
  }
  TimingOutcome outcome{summarize(candidate.samples_ms), summarize(eager.samples_ms), std::nullopt, {}, std::move(hold)};
  for (TimedFunction* f : order) {
    timing[f->name()] = to_json(summarize(f->samples_ms));
    outcome.block_medians_ms[f->name()] = f->block_medians_ms;
  }
  if (with_compile) outcome.compile = summarize(compile.samples_ms);
  timing["crosscheck"] = candidate.crosschecks;
  if (run.lean_timing) timing["lean"] = true;
  timing["timed_output"] = {{"input_sets", run.timing_sets},
                            {"repetitions", run.timed_reps_kept},
                            {"repetitions_checked", run.timed_reps_checked},
                            {"picks_per_block", kCheckedRepsPerBlock}};
  std::vector<json> device_states = eager.device_states;
  device_states.insert(device_states.end(), compile.device_states.begin(), compile.device_states.end());
  if (!device_states.empty()) timing["device_state"] = summarize_device_states(device_states);
  run.doc["timing"] = timing;
  run.add_check("timing_crosscheck", "pass", "reported times agree with kforge's clock");
  const double cand = outcome.candidate.median_ms;
  run.doc["speedup_vs_eager"] = cand > 0 ? json(outcome.eager.median_ms / cand) : json(nullptr);
  run.doc["speedup_vs_compile"] = outcome.compile && cand > 0 ? json(outcome.compile->median_ms / cand) : json(nullptr);
  return outcome;
}

}  // namespace kforge
