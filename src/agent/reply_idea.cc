#include "agent/reply_idea.h"

#include <sstream>

namespace kforge::agent {

namespace {

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t\r\n#/*-"));
  auto end = s.find_last_not_of(" \t\r\n");
  s.erase(end == std::string::npos ? 0 : end + 1);
  return s;
}

std::string shorten(std::string s, std::size_t max_chars) {
  for (auto& c : s)
    if (c == '\n' || c == '\t' || c == '|') c = ' ';
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

// The first sentence of the first prose line that is not a heading or a fence.
std::string from_prose(std::string_view reply) {
  std::istringstream in{std::string(reply)};
  bool in_fence = false;
  for (std::string line; std::getline(in, line);) {
    std::string t = line;
    t.erase(0, t.find_first_not_of(" \t"));
    if (t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence || t.empty() || t[0] == '#') continue;
    t = trim(t);
    if (t.empty()) continue;
    auto stop = t.find(". ");
    return stop == std::string::npos ? t : t.substr(0, stop + 1);
  }
  return "";
}

// The first comment line of the program that says something (not a shebang or an encoding line).
std::string from_code(std::string_view code) {
  std::istringstream in{std::string(code)};
  for (std::string line; std::getline(in, line);) {
    std::string t = line;
    t.erase(0, t.find_first_not_of(" \t"));
    if (t.rfind("#!", 0) == 0 || t.find("coding") != std::string::npos) continue;
    if (t.rfind("#", 0) == 0 || t.rfind("//", 0) == 0) {
      t = trim(t);
      if (t.size() >= 12) return t;
    }
  }
  return "";
}

}  // namespace

std::string reply_idea(std::string_view reply, std::string_view code, std::size_t max_chars) {
  std::string idea = from_prose(reply);
  if (idea.empty()) idea = from_code(code);
  return shorten(idea, max_chars);
}

}  // namespace kforge::agent
