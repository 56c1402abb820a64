#include "eval/correctness.h"

#include <fmt/format.h>

#include "eval/screening.h"
#include "eval/verdict.h"
#include "eval/worker_replies.h"

namespace kforge {

using json = nlohmann::json;
using Seconds = std::chrono::duration<double>;

PendingRequest send_make_trial(EvalRun& run, const std::string& tag, int trial, bool main_shape) {
  return run.ref->send(
      "make_trial",
      {{"trial", trial}, {"seed", run.seed}, {"tag", tag}, {"check_determinism", main_shape && trial == 0}},
      Seconds(run.opt.reference_timeout_s));
}

// Pipelined from trial run.pipelined_from on (the reference decides: memory and its precision
// audit): while the candidate runs trial t, the reference draws trial t+1; while the reference
// checks trial t, the candidate runs trial t+1. Earlier trials go one after another. Results are
// judged in trial order, and the first failure ends the loop (a run still in flight is abandoned
// with the process).
bool run_trials(EvalRun& run, const std::string& tag, int trials, bool main_shape,
                std::optional<PendingRequest> first_draw) {
  auto outputs_name = [&](int t) { return run.output_name(fmt::format("outputs_{}_{}", tag, t)); };
  // Trials of lean timing are served once each (timing serves its sets again in fresh buffers), so
  // the candidate may use a trial's device buffers in place rather than copy them first. The first
  // trial gives work a call left running on a host thread time to show up as a deferred output; on
  // the others such work makes the snapshot checked at the return wrong, and the trial incorrect.
  // The reference's digests of the set it published (device path) spare the candidate reading its
  // inputs once before the call to tell later whether the call changed them.
  auto run_trial = [&](int t, const WorkerReply& made) {
    const TrialInputs drawn = TrialInputs::decode(made.body);
    json request = {
        {"inputs", drawn.inputs}, {"outputs", outputs_name(t)}, {"in_place", run.lean_timing}, {"settle", t == 0}};
    if (!drawn.input_digests.is_null()) request["input_digests"] = drawn.input_digests;
    return run.cand->send("run", request, Seconds(run.opt.timeout_s));
  };
  if (trials <= 0) return true;
  run.phase(fmt::format("{} trial 1/{}", tag, trials));
  WorkerReply made = run.ref->wait(first_draw ? *first_draw : send_make_trial(run, tag, 0, main_shape));
  if (made.kind != WorkerReply::kOk) {
    run.fail_from_reference(made, "running trial 0");
    return false;
  }
  if (main_shape) {
    const TrialInputs first = TrialInputs::decode(made.body);
    run.correctness.detail["output"] = first.outputs;
    run.doc["problem_bytes"] = {{"inputs", first.input_bytes}, {"outputs", first.output_bytes}};
  }
  PendingRequest running = run_trial(0, made);
  for (int t = 0; t < trials; ++t) {
    if (t > 0) run.phase(fmt::format("{} trial {}/{}", tag, t + 1, trials));
    const bool last = t + 1 == trials;
    std::optional<PendingRequest> making;
    const bool overlap = run.pipelined_from >= 0 && t >= run.pipelined_from;
    if (!last && overlap) making = send_make_trial(run, tag, t + 1, main_shape);
    WorkerReply ran = run.cand->wait(running);
    if (ran.kind != WorkerReply::kOk) {
      run.fail_from_candidate(ran, fmt::format("trial {}", t));
      return false;
    }
    ++run.correctness.trials_run;
    PendingRequest checking = run.ref->send(
        "check",
        {{"trial", t}, {"candidate_outputs", outputs_name(t)},
         {"import_facts", main_shape && t == 0 ? run.import_facts : json(nullptr)}},
        Seconds(run.opt.reference_timeout_s));
    if (making) {
      made = run.ref->wait(*making);  // the reference answers in order: this reply comes before the check's
      if (made.kind == WorkerReply::kOk) running = run_trial(t + 1, made);
    }
    WorkerReply checked = run.ref->wait(checking);
    if (checked.kind != WorkerReply::kOk) {
      // The reference could not even read what the candidate wrote: that is the candidate's fault,
      // unless the device ran out of memory while the reference copied it (retried alone).
      if (run.reference_at_fault(checked)) {
        run.fail_from_reference(checked, "checking outputs");
      } else {
        run.fail(status::kIncorrect, "unreadable_outputs",
                 fmt::format("trial {}: the candidate's outputs could not be read: {}", t, reply_message(checked)));
      }
      return false;
    }
    const CheckReply c = CheckReply::decode(checked.body);
    if (!run.apply_findings(c.findings, c.precision)) return false;
    if (!c.match) {
      json mismatch = c.mismatch;
      mismatch["trial"] = t;
      mismatch["shape_tag"] = tag;
      run.correctness.detail["mismatch"] = mismatch;
      run.fail(status::kIncorrect, "mismatch",
               fmt::format("trial {}{}: {}", t, main_shape ? "" : " (size variant " + tag + ")", c.mismatch_message));
      return false;
    }
    if (c.input_mutation) {
      std::string msg = fmt::format("the candidate changed its inputs where the reference does not: {}", *c.input_mutation);
      run.add_check("input_mutation", "fail", msg);
      run.fail(status::kRejected, "input_mutation", msg);
      return false;
    }
    ++run.correctness.trials_passed;
    run.correctness.max_abs_error = std::max(run.correctness.max_abs_error, c.max_abs_error);
    run.correctness.max_rel_error = std::max(run.correctness.max_rel_error, c.max_rel_error);
    if (main_shape && t == 0) run.correctness.detail["tolerances"] = c.tolerances;
    if (main_shape && t == 0 && c.library_calls) run.doc["library_calls"] = {{"operators", *c.library_calls}};
    if (!last && !overlap) {
      made = run.ref->wait(send_make_trial(run, tag, t + 1, main_shape));
      if (made.kind == WorkerReply::kOk) running = run_trial(t + 1, made);
    }
    if (!last && made.kind != WorkerReply::kOk) {
      run.fail_from_reference(made, fmt::format("running trial {}", t + 1));
      return false;
    }
  }
  return true;
}

void check_shape_variants(EvalRun& run, const json& variants) {
  int index = 0;
  for (const auto& overrides : variants) {
    ++index;
    std::string tag = fmt::format("v{}", index);
    run.phase(fmt::format("size variant {}/{}", index, variants.size()));
    json reply;
    if (!load_problem(run, overrides, tag, &reply)) {
      if (run.decided()) return;
      continue;
    }
    if (!load_candidate(run, reply)) return;
    if (!run_trials(run, tag, run.opt.variant_trials, false)) return;
    run.correctness.detail["shapes_checked"].push_back({{"tag", tag}, {"globals", reply["globals"]}});
  }
}

void finish_checks(EvalRun& run) {
  if (run.precision_worst) run.doc["precision_audit"] = run.precision_worst->raw;
  if (run.correctness.trials_run == 0) return;
  for (const char* name : {"file_io", "network", "concurrency", "introspection", "monkey_patching", "output_type",
                           "deferred_output", "output_aliasing", "torch_delegation", "input_independent", "precision",
                           "precision_flags", "input_mutation"})
    merge_check(run.doc["checks"], {{"name", name}, {"verdict", "pass"}, {"message", "not observed at run time"}});
  if (run.opt.timing && run.doc.contains("timing") && run.doc["timing"].contains("candidate"))
    merge_check(run.doc["checks"],
                {{"name", "timed_output"}, {"verdict", "pass"},
                 {"message", fmt::format("{} timed repetitions picked at random after their block, correct across {} "
                                         "input sets swapped before every repetition",
                                         run.timed_reps_checked, run.timing_sets)}});
}

}  // namespace kforge
