#include "agent/python_scan.h"

#include <vector>

#include <fmt/format.h>

namespace kforge::agent {

std::string python_incomplete_reason(std::string_view code) {
  std::vector<char> open;
  std::size_t i = 0;
  const std::size_t n = code.size();
  while (i < n) {
    char c = code[i];
    if (c == '#') {
      while (i < n && code[i] != '\n') ++i;
      continue;
    }
    if (c == '"' || c == '\'') {
      const bool triple = i + 2 < n && code[i + 1] == c && code[i + 2] == c;
      const std::size_t start = i;
      i += triple ? 3 : 1;
      bool closed = false;
      while (i < n) {
        if (code[i] == '\\') {
          i += 2;
          continue;
        }
        if (triple ? code.substr(i, 3) == std::string(3, c) : code[i] == c) {
          i += triple ? 3 : 1;
          closed = true;
          break;
        }
        if (!triple && code[i] == '\n') break;
        ++i;
      }
      if (!closed) {
        if (triple) return fmt::format("unterminated triple-quoted string starting at offset {}", start);
        return fmt::format("unterminated string starting at offset {}", start);
      }
      continue;
    }
    if (c == '(' || c == '[' || c == '{') open.push_back(c);
    if (c == ')' || c == ']' || c == '}') {
      const char want = c == ')' ? '(' : c == ']' ? '[' : '{';
      if (open.empty() || open.back() != want) return fmt::format("unbalanced '{}'", c);
      open.pop_back();
    }
    ++i;
  }
  if (!open.empty()) return fmt::format("unclosed '{}'", open.back());
  return {};
}

}  // namespace kforge::agent
