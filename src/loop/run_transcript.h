// Everything a run said and produced, in order: each LLM call's prompt and reply, and the
// candidate each generation step wrote. `kforge report RUN --full` appends it to the report.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "store/store.h"

namespace kforge::loop {

// [{step, messages: [{role, text}], reply, input_tokens, output_tokens, candidate: {step, sha256,
// source} (when the call produced one)}], in the order the calls were made.
nlohmann::json build_transcript(const Store& store, std::int64_t run_id);

// For the terminal and for Markdown: headed sections with the texts in fenced blocks.
std::string transcript_markdown(const nlohmann::json& transcript);

}  // namespace kforge::loop
