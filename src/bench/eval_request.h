// One evaluation as it travels to another machine (a Ray node, docs/bench.md#executors): the
// problem and candidate as file name and source rather than paths, and every setting of
// EvalOptions that decides the result. `kind` is "evaluation" (one candidate, answered with its
// EvalResult) or "pair" (the refinement loop's head-to-head timing of the candidate, the current
// best, against a `challenger`, answered with a loop::PairMeasurement). The config file, the log folder and the driver's
// environment stay behind, so nothing secret is in a request.
#pragma once

#include <cstdint>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"
#include "target/target.h"

namespace kforge::bench {

inline constexpr int kEvalRequestVersion = 2;  // 2: `kind`, pairs

// A problem's weights file (`<stem>.pt` beside it, as `kforge model` writes its regions) travels
// with it, base64-encoded, up to this size.
inline constexpr std::uintmax_t kMaxProblemDataBytes = 256ull << 20;

// Reads the problem and candidate files of `options` (and the problem's weights file, if any).
nlohmann::json make_eval_request(const EvalOptions& options);
// A head-to-head timing of `best` and `challenger` with `options`' settings (options.candidate unused).
nlohmann::json make_pair_request(const EvalOptions& options, const std::filesystem::path& best,
                                 const std::filesystem::path& challenger);

// Whether the request asks for a pair (else one evaluation).
bool is_pair_request(const nlohmann::json& request);

// The options the request describes, its two files written into `workdir` (logs go to
// `workdir`/logs). Throws InputError on a malformed request or an unknown target.
EvalOptions eval_options_from_request(const nlohmann::json& request, const TargetRegistry& registry,
                                      const std::filesystem::path& workdir);
// A pair request's challenger, written into `workdir`/challenger; throws InputError when it has none.
std::filesystem::path challenger_from_request(const nlohmann::json& request, const std::filesystem::path& workdir);

}  // namespace kforge::bench
