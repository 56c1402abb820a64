#include "loop/run_options.h"

namespace kforge::loop {

using json = nlohmann::json;

// One list of fields for both directions, so a new option cannot be stored but not restored.
#define KFORGE_RUN_OPTION_FIELDS(X)                                                                                  \
  X(problem) X(target) X(device) X(llm) X(llm_base_url) X(replay_by_position) X(transfer_from) X(prompts_dir)      \
  X(out_dir) X(samples) X(jobs) X(rounds) X(max_fix) X(max_tokens) X(max_cost_usd) X(time_limit_s) X(patience)      \
  X(sol_stop) X(min_gain) X(reply_max_tokens) X(eval_trials) X(eval_reps) X(eval_warmup) X(compile_baseline)       \
  X(threads) X(eval_timeout_s) X(seed) X(precision) X(kernels_only) X(sandbox) X(python) X(overrides) X(profile) X(shapes) X(timing) \
  X(compile_only)

json to_json(const RunOptions& o) {
  json j;
#define X(f) j[#f] = o.f;
  KFORGE_RUN_OPTION_FIELDS(X)
#undef X
  j["temperature"] = o.temperature ? json(*o.temperature) : json(nullptr);
  return j;
}

RunOptions options_from_json(const json& j) {
  RunOptions o;
#define X(f) \
  if (j.contains(#f) && !j[#f].is_null()) j.at(#f).get_to(o.f);
  KFORGE_RUN_OPTION_FIELDS(X)
#undef X
  if (j.contains("temperature") && j["temperature"].is_number()) o.temperature = j["temperature"].get<double>();
  return o;
}

#undef KFORGE_RUN_OPTION_FIELDS

}  // namespace kforge::loop
