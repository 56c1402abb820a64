#include "agent/recommendations.h"

#include <regex>
#include <sstream>

namespace kforge::agent {

namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n"));
  auto end = s.find_last_not_of(" \t\r\n");
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
}

}  // namespace

std::vector<std::string> parse_recommendations(std::string_view reply, std::size_t max_items) {
  static const std::regex item(R"(^\s{0,3}(\d+[.)]|[-*+])\s+(.*)$)");
  std::vector<std::string> items;
  std::istringstream in{std::string(reply)};
  bool in_fence = false;
  bool continuing = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("```", 0) == 0) {
      in_fence = !in_fence;
      continuing = false;
      continue;
    }
    if (in_fence) continue;
    std::smatch m;
    if (std::regex_match(line, m, item)) {
      items.push_back(trim(m[2].str()));
      continuing = true;
    } else if (continuing && !trim(line).empty() && (line[0] == ' ' || line[0] == '\t')) {
      items.back() += " " + trim(line);  // an item wrapped onto indented lines
    } else {
      continuing = false;
    }
  }
  std::vector<std::string> out;
  for (auto& s : items)
    if (!s.empty() && out.size() < max_items) out.push_back(s);
  if (out.empty()) {
    std::string text = trim(std::string(reply));
    if (text.size() > 1500) text = text.substr(0, 1500) + "...";
    if (!text.empty()) out.push_back(text);
  }
  return out;
}

}  // namespace kforge::agent
