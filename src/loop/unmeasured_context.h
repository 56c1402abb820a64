// A prompt's context without what this machine measured, for replay matching. The loop renders
// every prompt twice: with the real context (sent to the model) and with this one (the message's
// match_text, llm/provider.h). A transcript recorded on one machine then replays on another
// without a "differs from transcript" warning, while a changed template, problem, size, candidate
// or choice of the best still changes the rendered text and is reported.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "agent/prompt_renderer.h"
#include "llm/provider.h"

namespace kforge::loop {

inline constexpr const char* kMeasured = "<measured>";

// `ctx` (a generate.*/analyze.* context, docs/loop.md) with everything that depends on how fast
// this machine ran left out: timings, speedups and their intervals, thread counts, speed-of-light
// figures (and whether any were available), the profile (and whether one could be taken when it was
// asked for: `profile_requested`), the reasons of keep decisions, measurement flags (`unstable`,
// `over_bound`), and whether a challenger that did not become the best was `rejected` or
// `undecided` (which side of 1 its interval fell). What stays: the problem, sizes, sources,
// diffs, ideas, advice, which attempts became the best and how the others failed.
nlohmann::json unmeasured_context(const nlohmann::json& ctx);

// Template `name` rendered with `ctx` as the model gets it, carrying the rendering of
// unmeasured_context(ctx) as its match_text when the two differ.
llm::Message prompt_message(const agent::PromptLibrary& prompts, llm::Role role, const std::string& name,
                            const nlohmann::json& ctx);

}  // namespace kforge::loop
