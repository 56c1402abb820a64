#include "eval/compile_log.h"

#include <regex>
#include <sstream>
#include <vector>

namespace kforge {

namespace {

// gcc/clang/PoCL "file:line:col: error: msg", nvcc "file(line): error: msg", ptxas "ptxas fatal".
const std::regex kErrorLine(R"((^|\s)([^\s:()]+[:(]\d+[:)]?(\d+:)?\s*(fatal )?error\b)|(^ptxas (fatal|error))|(^\w*Error:))",
                            std::regex::ECMAScript);
// Lines that start another diagnostic or are pure noise; they end an error's context.
const std::regex kNewDiagnostic(R"(^\S.*[:)] ?(\d+:)? ?(note|warning|In instantiation|required from)\b)");
const std::regex kNoise(R"(^(ninja: build stopped|FAILED:|\[\d+/\d+\]|In file included from|\s+from )|^c\+\+ |^g\+\+ |^/usr/bin/c\+\+ )");

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

}  // namespace

std::string trim_compile_log(const std::string& log, const TrimOptions& options) {
  auto lines = split_lines(log);
  std::string out;
  int errors = 0;
  for (std::size_t i = 0; i < lines.size() && errors < options.max_errors; ++i) {
    if (!std::regex_search(lines[i], kErrorLine) || std::regex_search(lines[i], kNoise)) continue;
    ++errors;
    out += lines[i] + "\n";
    for (int k = 1; k <= options.context_lines && i + k < lines.size(); ++k) {
      const std::string& next = lines[i + k];
      if (std::regex_search(next, kErrorLine) || std::regex_search(next, kNewDiagnostic) ||
          std::regex_search(next, kNoise))
        break;
      out += next + "\n";
    }
  }
  if (errors == 0) {
    // No recognisable diagnostics: keep the end, where failures are reported.
    std::size_t start = lines.size() > 30 ? lines.size() - 30 : 0;
    for (std::size_t i = start; i < lines.size(); ++i) out += lines[i] + "\n";
  } else {
    int total = 0;
    for (const auto& l : lines)
      if (std::regex_search(l, kErrorLine) && !std::regex_search(l, kNoise)) ++total;
    if (total > errors) out += "[" + std::to_string(total - errors) + " more errors in the full log]\n";
  }
  if (out.size() > options.max_chars) out = out.substr(0, options.max_chars) + "\n[... cut ...]\n";
  return out;
}

}  // namespace kforge
