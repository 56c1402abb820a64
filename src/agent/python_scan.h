// Just enough Python lexing to tell whether a program was cut off: every string (including
// triple-quoted kernel sources) closed and every bracket balanced.
#pragma once

#include <string>
#include <string_view>

namespace kforge::agent {

// Empty when the text looks complete, else why not ("unterminated triple-quoted string", ...).
std::string python_incomplete_reason(std::string_view code);

}  // namespace kforge::agent
