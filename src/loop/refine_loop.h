// The two-agent refinement loop behind `kforge run`:
//   round 0        : `samples` independent candidates from the generation agent;
//   each candidate : functional passes (evaluate; on failure send compact feedback and retry,
//                    up to max_fix times);
//   rounds 1..     : the performance agent studies the best correct candidate, its
//                    recommendations go into new generation prompts, and a new candidate is
//                    accepted only when it is correct and faster by a noise-aware test;
//   stop           : rounds, tokens, cost or wall-time budget, plateau, or near speed-of-light.
// Every LLM call and evaluation is stored under a stable step name ("r1.s0.a2.gen") as soon as
// it finishes; a resumed run re-walks the same steps and takes finished ones from the store, so
// nothing finished is redone and the decisions come out the same.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/prompt_renderer.h"
#include "eval/eval_options.h"
#include "llm/cancel.h"
#include "llm/provider.h"
#include "loop/evaluations.h"
#include "loop/progress.h"
#include "loop/run_options.h"
#include "store/store.h"
#include "target/target.h"

namespace kforge::loop {

struct RunContext {
  RunOptions options;
  std::int64_t run_id = 0;
  Store* store = nullptr;
  llm::Provider* provider = nullptr;
  agent::PromptLibrary prompts;
  Target target;
  EvalOptions eval_base;           // everything but candidate, log_dir, timing and trials
  std::filesystem::path work_dir;  // candidates/ and logs/ of this run
  Progress* progress = nullptr;
  const llm::CancelFlag* cancel = nullptr;
  // The provider runs child processes (exec:). An evaluation, when it ends, kills every child of
  // kforge that is not one of its live workers (escaped grandchildren come back to kforge, the
  // subreaper), so such calls must not overlap with evaluations.
  bool provider_spawns_processes = false;
  // Where evaluations run; null: in this process (LocalEvaluations).
  Evaluations* evaluations = nullptr;
  // Stop as interrupted once the step of this name is stored ("r1.analyze", "r0.s0.a0.eval",
  // "r1.profile", "r1.s0.a0.keep" for a head-to-head decision): the resume tests stop a run after
  // each kind of step. Empty: run on.
  std::string stop_after;
};

struct BestCandidate {
  std::string step;
  std::string sha256;
  std::string source;
  nlohmann::json eval;  // the timed EvalResult
};

struct RunOutcome {
  std::string status;       // finished, interrupted, failed
  std::string stop_reason;  // rounds, tokens, cost, time, plateau, speed_of_light, interrupted, error
  std::string message;      // for failed/interrupted runs
  std::optional<BestCandidate> best;
};

RunOutcome run_refinement(RunContext& context);

// Step names, shared with the report: r<round>.s<sample>.a<attempt>.
std::string candidate_step(int round, int sample, int attempt);

}  // namespace kforge::loop
