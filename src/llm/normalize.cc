// Request normalisation and diffs for replay (see normalize.h). A hand-written scanner
// rather than std::regex: prompts are long, and libstdc++'s regex recurses per character.
#include "llm/normalize.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <utility>
#include <vector>

#include <fmt/format.h>

namespace kforge::llm {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
bool is_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; }
bool is_path_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '/' || c == '.' || c == '_' || c == '-' ||
         c == '+' || c == '~' || c == '@' || c == '%' || c == '=';
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<std::string> temp_roots() {
  std::vector<std::string> roots = {"/tmp/", "/var/tmp/", "/private/var/folders/", "/var/folders/", "/dev/shm/"};
  if (const char* t = std::getenv("TMPDIR"); t && *t) {
    std::string r(t);
    if (!r.ends_with('/')) r += '/';
    if (r.size() > 1) roots.push_back(r);
  }
  return roots;
}

// Length of a match of `n` digits at `s[i]`, or 0.
bool digits_at(std::string_view s, std::size_t i, std::size_t n) {
  if (i + n > s.size()) return false;
  for (std::size_t k = 0; k < n; ++k)
    if (!is_digit(s[i + k])) return false;
  return true;
}

// ISO-8601 date-time at s[i] ("2024-05-01T12:00:00", optional fraction and zone); length or 0.
std::size_t timestamp_at(std::string_view s, std::size_t i) {
  if (!digits_at(s, i, 4) || i + 19 > s.size() || s[i + 4] != '-' || !digits_at(s, i + 5, 2) || s[i + 7] != '-' ||
      !digits_at(s, i + 8, 2) || (s[i + 10] != 'T' && s[i + 10] != ' ') || !digits_at(s, i + 11, 2) ||
      s[i + 13] != ':' || !digits_at(s, i + 14, 2) || s[i + 16] != ':' || !digits_at(s, i + 17, 2))
    return 0;
  std::size_t j = i + 19;
  if (j < s.size() && (s[j] == '.' || s[j] == ',')) {
    std::size_t k = j + 1;
    while (k < s.size() && is_digit(s[k])) ++k;
    if (k > j + 1) j = k;
  }
  if (j < s.size() && s[j] == 'Z') {
    ++j;
  } else if (j + 6 <= s.size() && (s[j] == '+' || s[j] == '-') && digits_at(s, j + 1, 2) && s[j + 3] == ':' &&
             digits_at(s, j + 4, 2)) {
    j += 6;
  }
  return j - i;
}

std::size_t uuid_at(std::string_view s, std::size_t i) {
  static constexpr std::size_t groups[] = {8, 4, 4, 4, 12};
  std::size_t j = i;
  for (std::size_t g = 0; g < 5; ++g) {
    for (std::size_t k = 0; k < groups[g]; ++k, ++j)
      if (j >= s.size() || !is_hex(s[j])) return 0;
    if (g < 4) {
      if (j >= s.size() || s[j] != '-') return 0;
      ++j;
    }
  }
  if (j < s.size() && is_word(s[j])) return 0;
  return j - i;
}

constexpr std::string_view kUnits[] = {"ns", "us", "µs", "ms", "s", "sec", "secs", "seconds", "msec",
                                       "min", "%", "x", "GB/s", "GiB/s", "MB/s", "TB/s", "GFLOPS",
                                       "TFLOPS", "GFLOP/s", "TFLOP/s", "MiB", "GiB", "MB", "GB", "KB", "KiB"};

// Length of a unit (after optional spaces) at s[i], or 0.
std::size_t unit_at(std::string_view s, std::size_t i) {
  std::size_t j = i;
  while (j < s.size() && s[j] == ' ') ++j;
  std::size_t best = 0;
  for (auto unit : kUnits) {
    if (unit == "x" && j != i) continue;  // "64 x 64" is a shape, "2.5x" a speedup
    if (s.substr(j).starts_with(unit)) {
      std::size_t end = j + unit.size();
      if (end < s.size() && is_word(s[end])) continue;
      best = std::max(best, end - i);
    }
  }
  return best;
}


// Where a wrong output is wrong depends on the trial's inputs, which are drawn from a secret per
// evaluation (docs/checks.md): "2073445 of 2097152 elements outside tolerance" and "worst at index
// [35, 27517]" differ from one run to the next, so their input-dependent parts are masked.
std::string mask_mismatch_details(std::string s) {
  static constexpr std::string_view kElements = " of ";
  static constexpr std::string_view kOutside = " elements outside tolerance";
  for (std::size_t at = s.find(kOutside); at != std::string::npos; at = s.find(kOutside, at + 1)) {
    const std::size_t of = s.rfind(kElements, at);
    if (of == std::string::npos) continue;
    std::size_t begin = of;
    while (begin > 0 && is_digit(s[begin - 1])) --begin;
    if (begin == of) continue;
    s.replace(begin, of - begin, "<NUM>");
    at = s.find(kOutside, begin);
  }
  static constexpr std::string_view kCount = "elements outside tolerance: ";
  for (std::size_t at = s.find(kCount); at != std::string::npos; at = s.find(kCount, at + 1)) {
    const std::size_t begin = at + kCount.size();
    std::size_t end = begin;
    while (end < s.size() && is_digit(s[end])) ++end;
    if (end > begin) s.replace(begin, end - begin, "<NUM>");
  }
  for (std::string_view index : {std::string_view("worst at index ["), std::string_view("worst index: [")}) {
    for (std::size_t at = s.find(index); at != std::string::npos; at = s.find(index, at + 1)) {
      const std::size_t open = at + index.size();
      const std::size_t close = s.find(']', open);
      if (close == std::string::npos) break;
      if (s.find_first_not_of("0123456789, ", open) < close) continue;
      s.replace(open, close - open, "<NUM>");
    }
  }
  // The values at the worst index and the largest errors: their sign too ("expected -<NUM>"), and
  // integers or nan, which the number rule keeps.
  for (std::string_view label : {std::string_view("at that index: expected "), std::string_view(", got "),
                                 std::string_view("- max abs error: "), std::string_view("- max rel error: ")}) {
    const bool after_index = label == ", got ";
    for (std::size_t at = s.find(label); at != std::string::npos; at = s.find(label, at + 1)) {
      if (after_index) {  // only the ", got " of an "at that index" line
        const std::size_t line = s.rfind('\n', at);
        const std::size_t from = line == std::string::npos ? 0 : line + 1;
        if (s.substr(from, at - from).find("at that index: expected ") == std::string::npos) continue;
      }
      const std::size_t begin = at + label.size();
      std::size_t end = s.find_first_of(after_index || label.starts_with("- ") ? "\n" : ",\n", begin);
      if (end == std::string::npos) end = s.size();
      if (end > begin) s.replace(begin, end - begin, "<NUM>");
    }
  }
  return s;
}

}  // namespace

std::string normalize_text(std::string_view in) {
  static const std::vector<std::string> roots = temp_roots();
  std::string out;
  out.reserve(in.size());
  std::size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    const bool boundary = i == 0 || !is_word(in[i - 1]);

    if (c == '/' && (i == 0 || !is_path_char(in[i - 1]))) {
      bool matched = false;
      for (const auto& root : roots) {
        if (in.substr(i).starts_with(root)) {
          std::size_t j = i + root.size();
          while (j < in.size() && is_path_char(in[j])) ++j;
          while (j > i + root.size() && in[j - 1] == '.') --j;  // a sentence's full stop
          out += "<TMP>";
          i = j;
          matched = true;
          break;
        }
      }
      if (matched) continue;
    }
    if (boundary && is_digit(c)) {
      if (std::size_t n = timestamp_at(in, i)) {
        out += "<TIME>";
        i += n;
        continue;
      }
    }
    if (boundary && is_hex(c)) {
      if (std::size_t n = uuid_at(in, i)) {
        out += "<UUID>";
        i += n;
        continue;
      }
    }
    if (boundary && c == '0' && i + 1 < in.size() && (in[i + 1] == 'x' || in[i + 1] == 'X')) {
      std::size_t j = i + 2;
      while (j < in.size() && is_hex(in[j])) ++j;
      if (j - i - 2 >= 6 && (j >= in.size() || !is_word(in[j]))) {
        out += "<HEX>";
        i = j;
        continue;
      }
    }
    if (boundary && is_digit(c)) {
      std::size_t j = i;
      while (j < in.size() && is_digit(in[j])) ++j;
      bool decimal = false;
      if (j + 1 < in.size() && in[j] == '.' && is_digit(in[j + 1])) {
        decimal = true;
        ++j;
        while (j < in.size() && is_digit(in[j])) ++j;
      }
      if (j + 1 < in.size() && (in[j] == 'e' || in[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < in.size() && (in[k] == '+' || in[k] == '-')) ++k;
        if (k < in.size() && is_digit(in[k])) {
          decimal = true;
          j = k;
          while (j < in.size() && is_digit(in[j])) ++j;
        }
      }
      const std::size_t unit = unit_at(in, j);
      if (j < in.size() && is_word(in[j]) && unit == 0) {  // part of an identifier such as 3x3conv
        out.append(in.substr(i, j - i));
        i = j;
        continue;
      }
      if (decimal || unit > 0) {
        out += "<NUM>";
        if (unit > 0) {
          std::string_view u = in.substr(j, unit);
          while (!u.empty() && u.front() == ' ') u.remove_prefix(1);
          out += u;
        }
        i = j + unit;
        continue;
      }
      out.append(in.substr(i, j - i));
      i = j;
      continue;
    }
    if (c == '\r' && i + 1 < in.size() && in[i + 1] == '\n') {
      ++i;
      continue;
    }
    out += c;
    ++i;
  }
  // Trailing blanks on every line.
  std::string trimmed;
  trimmed.reserve(out.size());
  std::size_t start = 0;
  while (start <= out.size()) {
    std::size_t end = out.find('\n', start);
    std::string_view line = std::string_view(out).substr(start, end == std::string::npos ? std::string::npos : end - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.remove_suffix(1);
    trimmed.append(line);
    if (end == std::string::npos) break;
    trimmed += '\n';
    start = end + 1;
  }
  return mask_mismatch_details(std::move(trimmed));
}

std::string normalized_request(const Request& request) {
  std::string out;
  for (const auto& message : request.messages) {
    out += fmt::format("### {}\n", role_name(message.role));
    if (!message.match_text.empty()) out += normalize_text(message.match_text) + '\n';
    for (const auto& part : message.content) {
      if (part.type == ContentPart::Type::kText) {
        if (!message.match_text.empty()) continue;  // stands for every text part
        out += normalize_text(part.text);
      } else {
        out += fmt::format("[image {} {:016x}]", part.media_type, fnv1a(part.data_base64));
      }
      out += '\n';
    }
  }
  return out;
}

std::string request_key(const Request& request) { return fmt::format("{:016x}", fnv1a(normalized_request(request))); }

std::string describe_difference(std::string_view recorded, std::string_view actual) {
  if (recorded == actual) return {};
  auto split = [](std::string_view s) {
    std::vector<std::string_view> lines;
    std::size_t start = 0;
    while (true) {
      std::size_t end = s.find('\n', start);
      lines.push_back(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
      if (end == std::string_view::npos) break;
      start = end + 1;
    }
    return lines;
  };
  auto a = split(recorded), b = split(actual);
  std::size_t line = 0;
  while (line < a.size() && line < b.size() && a[line] == b[line]) ++line;
  // The message the line belongs to.
  std::string section = "(start)";
  for (std::size_t k = 0; k <= line && k < b.size(); ++k)
    if (b[k].starts_with("### ")) section = std::string(b[k].substr(4));
  auto show = [](const std::vector<std::string_view>& lines, std::size_t i) {
    if (i >= lines.size()) return std::string("<end of request>");
    std::string_view l = lines[i];
    return l.size() > 200 ? fmt::format("{}...", l.substr(0, 200)) : std::string(l);
  };
  std::string out = fmt::format("first difference at line {} of the normalised request (in a {} message):\n",
                                line + 1, section);
  if (line > 0) out += fmt::format("    context:  {}\n", show(b, line - 1));
  out += fmt::format("    recorded: {}\n    actual:   {}", show(a, line), show(b, line));
  return out;
}

}  // namespace kforge::llm
