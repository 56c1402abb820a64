// A prompt's context without what this machine measured, for replay matching. The loop renders
// every prompt twice: with the real context (sent to the model) and with this one (the message's
// match_text, llm/provider.h). A transcript recorded on one machine then replays on another
// without a "differs from transcript" warning, while a changed template, problem, candidate or
// decision still changes the rendered text and is reported.
#pragma once

#include <nlohmann/json.hpp>

namespace kforge::loop {

inline constexpr const char* kMeasured = "<measured>";

// `ctx` (a generate.*/analyze.* context, docs/loop.md) with timings, speedups, thread counts,
// speed-of-light figures, the profile and the reasons of keep decisions replaced by kMeasured,
// and measurement flags left out (their presence depends on the machine too).
nlohmann::json unmeasured_context(const nlohmann::json& ctx);

}  // namespace kforge::loop
