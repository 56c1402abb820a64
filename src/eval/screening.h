// Screening: everything before the candidate's outputs are checked. Workers are taken, the problem
// is loaded in the reference, the candidate's source is checked statically (in the reference, which
// never runs it), the check is calibrated with null kernels, and the candidate is imported (built).
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/eval_run.h"

namespace kforge {

// Takes the workers for this run from the pool (the reference only unless build-only) and fills
// run.ref, run.cand, run.dirs and the environment in the document.
void take_workers(EvalRun& run, WorkerPool& pool, WorkerPair& workers, bool with_reference);

// False when the worker did not even start (no torch, no such device): the environment's fault.
bool worker_ready(EvalRun& run, PooledWorker& worker);

// Loads the problem (tag "main", or a size variant "v1", ...) in the reference. A variant the
// reference rejects is skipped with a note; then false is returned without a status.
bool load_problem(EvalRun& run, const nlohmann::json& overrides, const std::string& tag, nlohmann::json* reply);

// Static checks of the candidate's source, in a disposable process of the reference. A failure is
// kept in run.static_failure (the candidate still runs, so the runtime checks can name what it
// does); a source beyond the checks' limits (`static_limits`) or one they crashed on (`check_error`)
// is rejected at once. False when the candidate is rejected so or the reference fails.
bool static_check(EvalRun& run);

// Null-kernel calibration of the problem's check, in the reference.
bool calibrate(EvalRun& run);

// Importing the candidate, in two halves so the reference can work meanwhile.
PendingRequest send_load_candidate(EvalRun& run, const nlohmann::json& problem_reply);
bool finish_load_candidate(EvalRun& run, const WorkerReply& reply);
bool load_candidate(EvalRun& run, const nlohmann::json& problem_reply);

// --compile-only for compiled targets: import the candidate with builds on and launches off.
void compile_candidate_only(EvalRun& run, PooledWorker& candidate);

}  // namespace kforge
