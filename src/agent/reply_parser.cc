#include "agent/reply_parser.h"

#include <algorithm>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "agent/python_scan.h"

namespace kforge::agent {

namespace {

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  std::string line;
  std::istringstream in{std::string(text)};
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  return lines;
}

std::string join(const std::vector<std::string>& lines, std::size_t from, std::size_t to) {
  std::string out;
  for (std::size_t i = from; i < to && i < lines.size(); ++i) out += lines[i] + "\n";
  return out;
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// A fence: up to three spaces, then at least three backticks or tildes.
bool fence_at(const std::string& line, char* ch, std::size_t* len, std::string* info) {
  std::size_t i = 0;
  while (i < line.size() && i < 3 && line[i] == ' ') ++i;
  if (i >= line.size() || (line[i] != '`' && line[i] != '~')) return false;
  const char c = line[i];
  std::size_t j = i;
  while (j < line.size() && line[j] == c) ++j;
  if (j - i < 3) return false;
  *ch = c;
  *len = j - i;
  std::string rest = line.substr(j);
  rest.erase(0, rest.find_first_not_of(" \t"));
  auto end = rest.find_first_of(" \t{");
  *info = lower(rest.substr(0, end));
  return true;
}

bool is_python_language(const std::string& lang) {
  return lang.empty() || lang == "python" || lang == "py" || lang == "python3" || lang == "py3";
}

int score_block(const CodeBlock& b) {
  int score = 0;
  if (b.code.find("class ModelNew") != std::string::npos) score += 8;
  if (b.code.find("nn.Module") != std::string::npos || b.code.find("(Module)") != std::string::npos) score += 4;
  if (b.code.find("def forward") != std::string::npos) score += 2;
  if (b.code.find("import torch") != std::string::npos) score += 1;
  if (!is_python_language(b.language)) score -= 6;  // a C++ or shell block only wins if nothing else exists
  return score;
}

// Code without fences: from the first line that starts a Python program to the last line
// that is not prose.
std::string unfenced_program(std::string_view text) {
  auto lines = split_lines(text);
  static const std::regex start(R"(^(import |from \S+ import |class \w+|def \w+\(|@\w))");
  std::size_t first = lines.size();
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (std::regex_search(lines[i], start)) {
      first = i;
      break;
    }
  if (first == lines.size()) return {};
  // Trailing prose: unindented sentences after the code ("This kernel fuses ...").
  static const std::regex prose(R"(^[A-Z][A-Za-z']*( [A-Za-z0-9'`,;\-]+)+[.!:]?\s*$)");
  static const std::regex code_like(R"([=()\[\]{}]|^\s|^#|^(import|from|class|def|return|if|for|with)\b)");
  std::size_t last = lines.size();
  while (last > first) {
    const std::string& l = lines[last - 1];
    if (l.find_first_not_of(" \t") == std::string::npos ||
        (std::regex_search(l, prose) && !std::regex_search(l, code_like))) {
      --last;
      continue;
    }
    break;
  }
  return join(lines, first, last);
}

struct ModuleClass {
  std::string name;
  std::size_t pos;
};

std::vector<ModuleClass> module_classes(const std::string& code) {
  static const std::regex cls(R"((^|\n)class\s+(\w+)\s*\(\s*(?:torch\.)?(?:nn\.)?Module\s*\)\s*:)");
  std::vector<ModuleClass> out;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), cls); it != std::sregex_iterator(); ++it)
    out.push_back({(*it)[2].str(), static_cast<std::size_t>(it->position(2))});
  return out;
}

bool has_line_matching(const std::string& code, const char* pattern) {
  return std::regex_search(code, std::regex(pattern));
}

}  // namespace

std::vector<CodeBlock> extract_code_blocks(std::string_view text) {
  std::vector<CodeBlock> blocks;
  auto lines = split_lines(text);
  for (std::size_t i = 0; i < lines.size(); ++i) {
    char ch;
    std::size_t len;
    std::string info;
    if (!fence_at(lines[i], &ch, &len, &info)) continue;
    CodeBlock block;
    block.language = info;
    block.closed = false;
    std::size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      char ch2;
      std::size_t len2;
      std::string info2;
      if (fence_at(lines[j], &ch2, &len2, &info2) && ch2 == ch && len2 >= len && info2.empty()) {
        block.closed = true;
        break;
      }
    }
    block.code = join(lines, i + 1, j);
    blocks.push_back(std::move(block));
    i = j;
  }
  return blocks;
}

ParsedReply parse_candidate_reply(std::string_view text, bool cut_off) {
  ParsedReply r;
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    r.problem = "The reply was empty.";
    r.truncated = cut_off;
    return r;
  }
  auto blocks = extract_code_blocks(text);
  bool closed = true;
  if (!blocks.empty()) {
    // The best-scoring block wins; among equals the later one (models tend to refine as they go).
    std::size_t best = 0;
    for (std::size_t i = 1; i < blocks.size(); ++i)
      if (score_block(blocks[i]) >= score_block(blocks[best])) best = i;
    r.code = blocks[best].code;
    closed = blocks[best].closed;
    if (blocks.size() > 1) r.repairs.push_back(fmt::format("used code block {} of {}", best + 1, blocks.size()));
    if (!closed) r.repairs.push_back("the last code block has no closing fence");
  } else {
    r.code = unfenced_program(text);
    if (!r.code.empty()) r.repairs.push_back("the reply had no code fences; took the program out of the prose");
  }
  if (r.code.find_first_not_of(" \t\r\n") == std::string::npos) {
    r.problem = "The reply contains no Python program. Answer with one complete Python file in a single ```python "
                "code block.";
    r.truncated = cut_off;
    return r;
  }

  // Cut off: the model hit its token limit inside the program, or the program itself is unfinished.
  std::string incomplete = python_incomplete_reason(r.code);
  if ((cut_off && !closed) || !incomplete.empty()) {
    r.truncated = true;
    r.problem = fmt::format(
        "The reply was cut off before the program ended ({}). Send the complete program again, shorter: "
        "no explanations, no commented-out alternatives.",
        incomplete.empty() ? "the reply hit the length limit" : incomplete);
    return r;
  }

  auto classes = module_classes(r.code);
  bool has_model_new = std::any_of(classes.begin(), classes.end(), [](const auto& c) { return c.name == "ModelNew"; });
  if (!has_model_new) {
    if (classes.empty()) {
      r.problem = "The program defines no `class ModelNew(nn.Module)`. The candidate must define ModelNew with the same "
                  "constructor arguments and forward() signature as the reference Model.";
      return r;
    }
    // The top-level module is the last one defined (helpers come first); rename it everywhere.
    const std::string old_name = classes.back().name;
    r.code = std::regex_replace(r.code, std::regex("\\b" + old_name + "\\b"), "ModelNew");
    r.repairs.push_back(fmt::format("renamed class {} to ModelNew", old_name));
  }
  if (!has_line_matching(r.code, R"((^|\n)[ \t]*import torch[ \t]*(as |,|#|\n|$))") &&
      r.code.find("torch.") != std::string::npos) {
    r.code = "import torch\n" + r.code;
    r.repairs.push_back("added `import torch`");
  }
  if (r.code.find("nn.") != std::string::npos &&
      !has_line_matching(r.code, R"((^|\n)\s*(import torch\.nn as nn|from torch import nn|from torch import .*\bnn\b))")) {
    r.code = "import torch.nn as nn\n" + r.code;
    r.repairs.push_back("added `import torch.nn as nn`");
  }
  r.ok = true;
  return r;
}

}  // namespace kforge::agent
