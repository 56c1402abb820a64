#include "util/clean_text.h"

#include <algorithm>

namespace kforge {

namespace {

// Length of the escape sequence at text[i] (text[i] == ESC, or a C1 introducer of `c1_len` bytes).
std::size_t sequence_length(std::string_view text, std::size_t i, std::size_t intro_len, char kind) {
  std::size_t j = i + intro_len;
  if (kind == '[') {  // CSI: parameters and intermediates, then one final byte 0x40-0x7E
    while (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x20 && static_cast<unsigned char>(text[j]) <= 0x3F) ++j;
    while (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x20 && static_cast<unsigned char>(text[j]) <= 0x2F) ++j;
    if (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x40 && static_cast<unsigned char>(text[j]) <= 0x7E) ++j;
    return j - i;
  }
  if (kind == ']' || kind == 'P' || kind == 'X' || kind == '^' || kind == '_') {  // string: to BEL or ST
    while (j < text.size()) {
      if (text[j] == '\a') return j + 1 - i;
      if (text[j] == '\x1b' && j + 1 < text.size() && text[j + 1] == '\\') return j + 2 - i;
      if (static_cast<unsigned char>(text[j]) == 0xC2 && j + 1 < text.size() && static_cast<unsigned char>(text[j + 1]) == 0x9C)
        return j + 2 - i;
      ++j;
    }
    return j - i;  // unterminated: everything to the end
  }
  return intro_len;
}

}  // namespace

std::string terminal_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0x1b) {
      if (i + 1 >= text.size()) break;
      const char kind = text[i + 1];
      // ESC [ / ] / P / X / ^ / _ introduce sequences with a body; other ESC x pairs (and ESC with an
      // intermediate byte, e.g. ESC ( B) are two or three bytes.
      if (kind == '[' || kind == ']' || kind == 'P' || kind == 'X' || kind == '^' || kind == '_') {
        i += sequence_length(text, i, 2, kind);
      } else {
        std::size_t j = i + 1;
        while (j < text.size() && static_cast<unsigned char>(text[j]) >= 0x20 && static_cast<unsigned char>(text[j]) <= 0x2F) ++j;
        i = std::min(text.size(), j + 1);
      }
      continue;
    }
    if (c == 0xC2 && i + 1 < text.size() && static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
        static_cast<unsigned char>(text[i + 1]) <= 0x9F) {  // a C1 control in UTF-8
      const auto c1 = static_cast<unsigned char>(text[i + 1]);
      const char kind = c1 == 0x9B ? '[' : c1 == 0x9D ? ']' : c1 == 0x90 ? 'P' : c1 == 0x98 ? 'X' : c1 == 0x9E ? '^'
                        : c1 == 0x9F ? '_' : 0;
      i += kind ? sequence_length(text, i, 2, kind) : 2;
      continue;
    }
    if (c == '\r') {
      if (i + 1 < text.size() && text[i + 1] == '\n') {
        ++i;  // CR LF: the newline alone
        continue;
      }
      if (i + 1 < text.size()) out += '\n';
      ++i;
      continue;
    }
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      ++i;
      continue;
    }
    // Lone C1 bytes (not UTF-8) are left to the terminal's UTF-8 decoder, which shows them as
    // replacement characters; a terminal in an 8-bit mode is not one kforge supports.
    out += static_cast<char>(c);
    ++i;
  }
  return out;
}

std::string terminal_line(std::string_view text) {
  std::string out = terminal_text(text);
  for (char& c : out)
    if (c == '\n' || c == '\t') c = ' ';
  return out;
}

std::string markdown_text(std::string_view text) {
  static constexpr std::string_view kSpecial = "\\`*[]<>!|&";
  std::string out;
  for (char c : terminal_text(text)) {
    if (c == '\n') {
      out += ' ';
      continue;
    }
    if (kSpecial.find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

namespace {

std::size_t longest_backtick_run(std::string_view s) {
  std::size_t best = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}

}  // namespace

std::string markdown_code_block(std::string_view text, std::string_view language) {
  const std::string clean = terminal_text(text);
  const std::string fence(std::max<std::size_t>(3, longest_backtick_run(clean) + 1), '`');
  std::string out = fence + std::string(language) + "\n" + clean;
  if (!clean.empty() && clean.back() != '\n') out += '\n';
  return out + fence + "\n";
}

std::string markdown_code_span(std::string_view text) {
  std::string clean = terminal_text(text);
  for (char& c : clean)
    if (c == '\n' || c == '\t') c = ' ';
  std::string escaped;
  for (char c : clean) escaped += c == '|' ? std::string("\\|") : std::string(1, c);
  const std::string ticks(longest_backtick_run(escaped) + 1, '`');
  const bool pad = !escaped.empty() && (escaped.front() == '`' || escaped.back() == '`');
  return ticks + (pad ? " " : "") + escaped + (pad ? " " : "") + ticks;
}

}  // namespace kforge
