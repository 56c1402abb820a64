// One evaluation as it travels to another machine (a Ray node, docs/bench.md#executors): the
// problem and candidate as file name and source rather than paths, and every setting of
// EvalOptions that decides the result. The config file, the log folder and the driver's
// environment stay behind, so nothing secret is in a request.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "eval/eval_options.h"
#include "target/target.h"

namespace kforge::bench {

inline constexpr int kEvalRequestVersion = 1;

// Reads the problem and candidate files of `options`.
nlohmann::json make_eval_request(const EvalOptions& options);

// The options the request describes, its two files written into `workdir` (logs go to
// `workdir`/logs). Throws InputError on a malformed request or an unknown target.
EvalOptions eval_options_from_request(const nlohmann::json& request, const TargetRegistry& registry,
                                      const std::filesystem::path& workdir);

}  // namespace kforge::bench
