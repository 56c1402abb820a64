// Replay matches requests on a normalised key, so that a transcript recorded yesterday
// still matches today's run although temporary paths, timings and addresses changed.
// The masking rules are listed in docs/llm.md ("Normalised key").
#pragma once

#include <string>
#include <string_view>

#include "llm/provider.h"

namespace kforge::llm {

// `text` with volatile parts masked: temporary paths -> <TMP>, timestamps -> <TIME>,
// UUIDs -> <UUID>, hex addresses -> <HEX>, decimals and numbers with a measurement unit
// -> <NUM>; CRLF -> LF and trailing blanks removed from every line.
std::string normalize_text(std::string_view text);

// The whole request as normalised text: one "### role" header per message followed by its
// normalised text (its match_text when it has one: the prompt without what the machine
// measured); images as "[image MEDIA_TYPE HASH]". max_tokens and temperature are left out,
// so changing them does not invalidate a transcript.
std::string normalized_request(const Request& request);

// 16 hex digits of the FNV-1a 64-bit hash of normalized_request().
std::string request_key(const Request& request);

// Where two normalised requests first differ: line number and both lines, with a line of
// context before, for error messages. Empty when they are equal.
std::string describe_difference(std::string_view recorded, std::string_view actual);

}  // namespace kforge::llm
