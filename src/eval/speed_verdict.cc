#include "eval/speed_verdict.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "eval/speedup.h"
#include "eval/verdict.h"
#include "util/paths.h"

namespace kforge {

using json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

namespace {

void speedup_intervals(EvalRun& run, const TimingOutcome& timing) {
  json speedup = json::object();
  const auto& blocks = timing.block_medians_ms;
  auto candidate = blocks.find("candidate");
  for (const char* base : {"eager", "compile"}) {
    auto baseline = blocks.find(base);
    if (baseline != blocks.end() && candidate != blocks.end() && baseline->second.size() == candidate->second.size()) {
      const SpeedupEstimate estimate = estimate_speedup(baseline->second, candidate->second);
      speedup[std::string("vs_") + base] = to_json(estimate);
      // One number per comparison: the headline speedup is the interval's own point estimate.
      run.doc[std::string("speedup_vs_") + base] = estimate.point;
    }
  }
  run.doc["speedup"] = speedup;
}

// The reference's SOL figures with the candidate's and eager's place against them.
std::optional<json> ask_sol(EvalRun& run, const TimingOutcome& timing, bool remeasure_peaks, WorkerReply* failed) {
  json args = {{"trial", 0}, {"peaks_cache", (cache_dir() / "peaks").string()}};
  if (remeasure_peaks) args["remeasure_peaks"] = true;
  WorkerReply s = run.ref->request("sol", args, Seconds(run.opt.reference_timeout_s));
  if (s.kind != WorkerReply::kOk) {
    if (failed) *failed = s;
    return std::nullopt;
  }
  json sol = s.body;
  sol.erase("id");
  sol.erase("ok");
  if (remeasure_peaks) sol["peaks_remeasured"] = true;
  const double sol_ms = sol.value("sol_ms", 0.0);
  sol["candidate_pct_of_sol"] = percent_of_sol(sol_ms, timing.candidate.median_ms);
  sol["eager_pct_of_sol"] = percent_of_sol(sol_ms, timing.eager.median_ms);
  sol["slack"] = run.opt.sol_slack;
  return sol;
}

// The physical bound (sol.hard): the bytes the outputs and the inputs they depend on require.
std::optional<json> ask_hard_bound(EvalRun& run) {
  run.phase("beyond the FLOP bound: computing the physical bound");
  WorkerReply h = run.ref->request(
      "hard_bound", {{"trial", 0}, {"seed", run.seed}, {"peaks_cache", (cache_dir() / "peaks").string()}},
      Seconds(run.opt.reference_timeout_s));
  if (h.kind != WorkerReply::kOk) {
    run.doc["notes"].push_back(fmt::format("physical speed-of-light bound not computed: {}", reply_message(h)));
    return std::nullopt;
  }
  json hard = h.body;
  hard.erase("id");
  hard.erase("ok");
  return hard;
}

// The cached-results measurement (docs/checks.md): rounds of kFreshSetsPerRound blocks, each ending
// in a call on a fresh set. A second round follows, after a pause, only where the first one looks
// cached, and the candidate is rejected only where both do: a burst of load that stalled every fresh
// call of the first round usually passes within the pause.
constexpr int kFreshSetsPerRound = 3;
constexpr int kFreshRounds = 2;
constexpr auto kPauseBeforeSecondRound = std::chrono::milliseconds(500);

bool degenerate_problem(const EvalRun& run) {
  return run.doc.contains("calibration") && run.doc["calibration"].value("degenerate", false);
}

// One round looks cached: its fastest fresh call is far slower than the lower quartile of its calls
// on seen sets, and than the median call the candidate's speed is claimed from (`claimed_ms`).
bool round_looks_cached(const FreshRound& round, double claimed_ms) {
  const std::vector<double> fresh = round.fresh_calls_ms();
  return far_slower(fresh, lower_quartile(round.seen_calls_ms())) && far_slower(fresh, claimed_ms);
}

bool looks_cached(const EvalRun& run, const FreshTiming& measured, double claimed_ms) {
  if (degenerate_problem(run) || static_cast<int>(measured.rounds.size()) < kFreshRounds) return false;
  return std::all_of(measured.rounds.begin(), measured.rounds.end(),
                     [&](const FreshRound& r) { return round_looks_cached(r, claimed_ms); });
}

json to_json(const FreshTiming& measured, double claimed_ms) {
  json rounds = json::array();
  json blocks = json::array();
  for (const FreshRound& r : measured.rounds) {
    const std::vector<double> seen = r.seen_calls_ms();
    rounds.push_back({{"fresh_calls_ms", r.fresh_calls_ms()},
                      {"seen_calls_ms", seen},
                      {"seen_lower_quartile_ms", lower_quartile(seen)},
                      {"looks_cached", round_looks_cached(r, claimed_ms)}});
    for (const auto& block : r.blocks_ms) blocks.push_back(block);
  }
  return {{"fresh_calls_ms", measured.fresh_calls_ms()}, {"seen_calls_ms", measured.seen_calls_ms()},
          {"blocks_ms", blocks},                       {"rounds", rounds},
          {"claimed_ms", claimed_ms},                  {"seconds", measured.seconds}};
}

// The candidate timed on fresh input sets (once per run), recorded in the result. `claimed_ms`: its
// median timed call. False once the run is decided.
bool measure_fresh_inputs(EvalRun& run, double claimed_ms, FreshTiming* out) {
  if (run.fresh) {
    *out = *run.fresh;
    return true;
  }
  if (!time_on_fresh_inputs(run, kFreshSetsPerRound, out)) return false;
  if (!degenerate_problem(run) && round_looks_cached(out->rounds.front(), claimed_ms)) {
    run.phase("slow on fresh inputs: timing more fresh inputs");
    std::this_thread::sleep_for(kPauseBeforeSecondRound);
    for (int round = 1; round < kFreshRounds; ++round)
      if (!time_on_fresh_inputs(run, kFreshSetsPerRound, out)) return false;
  }
  json& timing = run.doc["timing"];
  timing["fresh_inputs_ms"] = out->fresh_ms;
  timing["fresh_inputs_again_ms"] = out->again_ms;
  timing["fresh_inputs"] = to_json(*out, claimed_ms);
  return true;
}

// Why the candidate remembers results by input content (`suspicious`), or empty. The output of a
// degenerate problem does not depend on its inputs: remembering it is the answer.
std::string cached_results(const EvalRun& run, const FreshTiming& measured, double claimed_ms) {
  if (!looks_cached(run, measured, claimed_ms)) return "";
  const auto fastest = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
  std::string rounds;
  for (const FreshRound& r : measured.rounds)
    rounds += fmt::format("{}{:.3g} ms against {:.3g} ms", rounds.empty() ? "" : "; ", fastest(r.fresh_calls_ms()),
                          lower_quartile(r.seen_calls_ms()));
  return fmt::format("in each of {} rounds of {} fresh input sets, the fastest first call on a fresh set was over {:g}x "
                     "slower than the lower quartile of the calls on inputs it had seen, in the same blocks ({}), and "
                     "than its median timed call ({:.3g} ms): it is only fast when the inputs come back (cached "
                     "results)",
                     measured.rounds.size(), kFreshSetsPerRound, kCachedResultsRatio, rounds, claimed_ms);
}

bool reject_as_suspicious(EvalRun& run, const std::string& why) {
  merge_check(run.doc["checks"], {{"name", "suspicious"}, {"verdict", "fail"}, {"message", why}});
  run.fail(status::kRejected, "suspicious", why);
  return false;
}

}  // namespace

bool judge_speed(EvalRun& run, const TimingOutcome& timing) {
  speedup_intervals(run, timing);
  const double cand_ms = timing.candidate.median_ms;
  const double eager_ms = timing.eager.median_ms;
  // Whether the candidate is beyond the speed of light is asked of its fastest call: a loaded machine
  // stretches the median of calls that only return a remembered result past the bound, never the
  // fastest of them. A call on fresh inputs settles it either way.
  const double fastest_ms = timing.candidate.min_ms > 0 ? timing.candidate.min_ms : cand_ms;
  WorkerReply failed;
  std::optional<json> asked = ask_sol(run, timing, false, &failed);
  if (!asked) {
    run.doc["notes"].push_back(fmt::format("speed of light not computed: {}", reply_message(failed)));
  } else {
    json sol = *asked;
    SolCall call = judge_sol(sol.value("sol_ms", 0.0), fastest_ms, eager_ms, run.opt.sol_slack);
    if (call == SolCall::kModelUnreliable && sol.value("peaks_cached", false)) {
      // Peaks cached while the machine was busy understate it: measure them again, once.
      if (std::optional<json> again = ask_sol(run, timing, true, nullptr)) {
        sol = *again;
        call = judge_sol(sol["sol_ms"].get<double>(), fastest_ms, eager_ms, run.opt.sol_slack);
      }
    }
    const double sol_ms = sol.value("sol_ms", 0.0);
    json check = {{"name", "speed_of_light"}, {"verdict", "pass"},
                  {"message", fmt::format("candidate at {:.3g}% of speed of light ({:.3g} ms)",
                                          sol["candidate_pct_of_sol"].get<double>(), sol_ms)}};
    if (call == SolCall::kModelUnreliable) {
      check["verdict"] = "warn";
      check["message"] = fmt::format("the eager reference runs at {:.3g}% of the estimated speed of light: the estimate "
                                     "does not describe this problem and judges nobody", sol["eager_pct_of_sol"].get<double>());
    } else if (call == SolCall::kBeyond) {
      run.phase("faster than speed of light: re-measuring on fresh inputs");
      FreshTiming measured;
      if (!measure_fresh_inputs(run, cand_ms, &measured)) return false;
      const double fresh = measured.fresh_ms;
      sol["remeasured_ms"] = fresh;
      sol["remeasured_again_ms"] = measured.again_ms;
      sol["remeasured_pct_of_sol"] = percent_of_sol(sol_ms, fresh);
      run.doc["sol"] = sol;
      const bool beyond_flops = judge_sol(sol_ms, fresh, eager_ms, run.opt.sol_slack) == SolCall::kBeyond;
      std::optional<json> hard = beyond_flops ? ask_hard_bound(run) : std::nullopt;
      if (hard) sol["hard"] = *hard;
      std::string why;
      if (beyond_flops && !hard)
        why = fmt::format("{:.3g} ms per call on fresh inputs is {:.3g}% of the speed of light ({:.3g} ms for {} FLOPs "
                          "and {} bytes), and the physical bound could not be computed", fresh,
                          sol["remeasured_pct_of_sol"].get<double>(), sol_ms, sol.value("flops", 0), sol.value("bytes", 0));
      else if (beyond_flops && beyond_physical_bound(hard->value("hard_ms", 0.0), fresh, run.opt.sol_slack))
        why = fmt::format("{:.3g} ms per call on fresh inputs is faster than writing its outputs and reading the inputs "
                          "they depend on allows ({:.3g} ms for {} bytes at the best measured bandwidth): physically "
                          "impossible", fresh, hard->value("hard_ms", 0.0), hard->value("bytes", 0));
      else
        why = cached_results(run, measured, cand_ms);
      if (!why.empty()) {
        run.doc["sol"] = sol;
        return reject_as_suspicious(run, why);
      }
      check["verdict"] = "warn";
      if (beyond_flops) {
        run.speed_class = "algebraically_cheaper";
        check["message"] = fmt::format("beyond the FLOP bound ({:.3g} ms) on fresh inputs ({:.3g} ms), within the "
                                       "physical bound ({:.3g} ms): an exact rewrite that does less work than the "
                                       "reference (speed_class algebraically_cheaper)",
                                       sol_ms, fresh, hard->value("hard_ms", 0.0));
      } else {
        check["message"] = fmt::format("beyond the speed of light once, within it when re-measured on fresh inputs "
                                       "({:.3g} ms)", fresh);
      }
    }
    run.doc["sol"] = sol;
    merge_check(run.doc["checks"], check);
  }
  // Any timed speed may come from results remembered by input content, within the speed of light too
  // (a loaded machine stretches even a cache hit past the bound), and not only a speedup over the
  // baselines: a loop keeps a candidate faster than its best so far, which may be slower than eager
  // (and under load a cache hit took as long as eager's matmul). Fresh inputs settle it, every time.
  run.phase("timing fresh inputs");
  FreshTiming measured;
  if (!measure_fresh_inputs(run, cand_ms, &measured)) return false;
  if (std::string why = cached_results(run, measured, cand_ms); !why.empty()) return reject_as_suspicious(run, why);
  const double speedup_point = eager_ms / cand_ms;
  if (speedup_point > run.opt.speedup_warn_factor) {
    merge_check(run.doc["checks"], {{"name", "implausible_speedup"}, {"verdict", "warn"},
                                    {"message", fmt::format("{:.1f}x faster than eager (threshold {:.0f}x); re-measured "
                                                            "on fresh inputs: {:.1f}x", speedup_point,
                                                            run.opt.speedup_warn_factor, eager_ms / measured.fresh_ms)}});
  }
  return true;
}

}  // namespace kforge
