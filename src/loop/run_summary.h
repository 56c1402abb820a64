// A run's trajectory and result, rebuilt from what the store holds (decisions, LLM calls), so
// `kforge run` at its end and `kforge report RUN` at any later time (even for a run that was
// killed) show the same thing: as JSON, as a Markdown report, or as plain text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace kforge::loop {

nlohmann::json build_summary(const Store& store, std::int64_t run_id);

// The report written next to the best candidate: verdict, settings, speedup over iterations.
std::string markdown_report(const nlohmann::json& summary);

// The summary's request_sizes in one line: the largest generation request per round, the largest analysis.
std::string request_sizes_text(const nlohmann::json& sizes);

// The trajectory for a terminal.
std::string text_report(const nlohmann::json& summary);

// One paragraph: the result, or plainly that PyTorch should be kept.
std::string verdict_text(const nlohmann::json& summary);

}  // namespace kforge::loop
