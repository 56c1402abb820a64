#include "eval/speed_verdict.h"

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
      if (!time_on_fresh_inputs(run, &measured)) return false;
      const double fresh = measured.fresh_ms;
      sol["remeasured_ms"] = fresh;
      sol["remeasured_again_ms"] = measured.again_ms;
      sol["remeasured_pct_of_sol"] = percent_of_sol(sol_ms, fresh);
      run.doc["sol"] = sol;
      const bool beyond_flops = judge_sol(sol_ms, fresh, eager_ms, run.opt.sol_slack) == SolCall::kBeyond;
      std::optional<json> hard = beyond_flops ? ask_hard_bound(run) : std::nullopt;
      if (hard) sol["hard"] = *hard;
      // The output of a degenerate problem does not depend on its inputs: remembering it is the answer.
      const bool degenerate = run.doc.contains("calibration") && run.doc["calibration"].value("degenerate", false);
      std::string why;
      if (beyond_flops && !hard)
        why = fmt::format("{:.3g} ms per call on fresh inputs is {:.3g}% of the speed of light ({:.3g} ms for {} FLOPs "
                          "and {} bytes), and the physical bound could not be computed", fresh,
                          sol["remeasured_pct_of_sol"].get<double>(), sol_ms, sol.value("flops", 0), sol.value("bytes", 0));
      else if (beyond_flops && beyond_physical_bound(hard->value("hard_ms", 0.0), fresh, run.opt.sol_slack))
        why = fmt::format("{:.3g} ms per call on fresh inputs is faster than writing its outputs and reading the inputs "
                          "they depend on allows ({:.3g} ms for {} bytes at the best measured bandwidth): physically "
                          "impossible", fresh, hard->value("hard_ms", 0.0), hard->value("bytes", 0));
      else if (!degenerate && only_fast_on_seen_inputs(measured.again_ms, fresh))
        why = fmt::format("{:.3g} ms per call on inputs it has seen, {:.3g} ms on fresh inputs (medians of three "
                          "calls, each fresh call followed by one on the same inputs): it is only fast when the inputs "
                          "come back (cached results)", measured.again_ms, fresh);
      if (!why.empty()) {
        run.doc["sol"] = sol;
        merge_check(run.doc["checks"], {{"name", "suspicious"}, {"verdict", "fail"}, {"message", why}});
        run.fail(status::kRejected, "suspicious", why);
        return false;
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
  const double speedup_point = eager_ms / cand_ms;
  if (speedup_point > run.opt.speedup_warn_factor) {
    run.phase("implausible speedup: re-measuring on fresh inputs");
    FreshTiming measured;
    if (!time_on_fresh_inputs(run, &measured)) return false;
    const double fresh = measured.fresh_ms;
    run.doc["timing"]["fresh_inputs_ms"] = fresh;
    run.doc["timing"]["fresh_inputs_again_ms"] = measured.again_ms;
    merge_check(run.doc["checks"], {{"name", "implausible_speedup"}, {"verdict", "warn"},
                                    {"message", fmt::format("{:.1f}x faster than eager (threshold {:.0f}x); re-measured "
                                                            "on fresh inputs: {:.1f}x", speedup_point,
                                                            run.opt.speedup_warn_factor, eager_ms / fresh)}});
  }
  return true;
}

}  // namespace kforge
