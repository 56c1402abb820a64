// The one-line idea of a candidate, for the history of attempts the agents see: what the author
// said the candidate does, taken from the reply's prose (outside code blocks), else from the
// first comment of the program.
#pragma once

#include <string>
#include <string_view>

namespace kforge::agent {

// At most `max_chars` characters on one line; empty when the reply says nothing about it.
std::string reply_idea(std::string_view reply, std::string_view code, std::size_t max_chars = 140);

}  // namespace kforge::agent
