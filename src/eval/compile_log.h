// Trimming a compiler's output to what a person (or a model) needs to fix the error: the first
// errors with file and line and their source excerpt, not pages of template instantiation notes.
#pragma once

#include <string>

namespace kforge {

struct TrimOptions {
  int max_errors = 3;       // errors kept
  int context_lines = 4;    // lines kept after each error line (source excerpt, caret)
  std::size_t max_chars = 4000;
};

std::string trim_compile_log(const std::string& log, const TrimOptions& options = {});

}  // namespace kforge
