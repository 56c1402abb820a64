#include "agent/recommendations.h"

#include <algorithm>
#include <optional>
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

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r") == std::string::npos; }

std::size_t indent_of(const std::string& line) {
  std::size_t n = 0;
  for (char c : line) {
    if (c == ' ') ++n;
    else if (c == '\t') n += 4;
    else break;
  }
  return n;
}

bool is_fence(const std::string& line) {
  const std::string t = trim(line);
  return t.rfind("```", 0) == 0 || t.rfind("~~~", 0) == 0;
}

// How the analyst marks the top-level recommendations, strongest first: numbered headings
// ("### 1. Fuse", "## Recommendation 2: ..."), numbered list items ("1." "2)" "**3.**"), bullets.
enum class Style { kHeading, kNumbered, kBullet };

struct Line {
  std::string text;
  bool in_fence = false;  // inside (or opening/closing) a fenced code block
};

const std::regex kHeadingItem(R"(^\s{0,3}#{1,6}\s+(?:\*\*)?(?:(?:Recommendation|Step|Change)\s+)?\d+\s*[.):\-]?\s*(?:\*\*)?\s*(.*)$)",
                              std::regex::icase);
const std::regex kHeading(R"(^\s{0,3}#{1,6}\s)");
// "1. x", "2) x", "**3.** x", "**4. x**" (the bold then stays around x).
const std::regex kNumberedItem(R"(^(\s*)(\*\*)?\s*\d+[.)](\*\*)?\s+(.*)$)");
// Numbered headings that name a section of the reply rather than a recommendation.
const std::regex kSectionWord(R"(^(?:\*\*)?(?:analysis|summary|recommendations|bottlenecks?|diagnosis|overview|profile|conclusions?|what|why|current)\b)",
                              std::regex::icase);
const std::regex kBulletItem(R"(^(\s*)[-*+]\s+(.*)$)");

// The text after the marker when `line` starts a top-level item in `style` at `indent` (at most one
// more space of indentation than the first item: "9." and "10." line up differently).
std::optional<std::string> item_start(const std::string& line, Style style, std::size_t indent) {
  std::smatch m;
  switch (style) {
    case Style::kHeading:
      if (std::regex_match(line, m, kHeadingItem) && !std::regex_search(m[1].first, m[1].second, kSectionWord))
        return m[1].str();
      return std::nullopt;
    case Style::kNumbered:
      if (std::regex_match(line, m, kNumberedItem) && indent_of(line) <= indent + 1)
        return (m[2].matched && !m[3].matched ? "**" : "") + m[4].str();
      return std::nullopt;
    case Style::kBullet:
      if (std::regex_match(line, m, kBulletItem) && indent_of(line) <= indent + 1 && trim(line) != "---" &&
          trim(line) != "***")
        return m[2].str();
      return std::nullopt;
  }
  return std::nullopt;
}

// The style and indentation of the first top-level item, by the strongest style present.
std::optional<std::pair<Style, std::size_t>> list_style(const std::vector<Line>& lines) {
  for (Style style : {Style::kHeading, Style::kNumbered, Style::kBullet}) {
    std::optional<std::size_t> first;
    int count = 0;
    for (const auto& l : lines) {
      if (l.in_fence || !item_start(l.text, style, 3)) continue;
      if (!first) first = indent_of(l.text);
      ++count;
    }
    // One numbered heading is a section title; recommendations under headings come two or more.
    if (first && (style != Style::kHeading || count >= 2)) return std::make_pair(style, *first);
  }
  return std::nullopt;
}

// An item's lines as Markdown that reads right after "N. ": its continuation lines indented by
// three spaces under the marker, their own indentation (nested lists, code) kept relative to the
// item's.
std::string item_text(const std::string& first, std::vector<std::string> rest, bool last) {
  // After the last item, a paragraph that starts at the margin after a blank line is the reply's
  // closing prose, not part of the recommendation.
  if (last) {
    bool fence = false;
    for (std::size_t i = 0; i < rest.size(); ++i) {
      if (is_fence(rest[i])) fence = !fence;
      if (!fence && i > 0 && blank(rest[i - 1]) && !blank(rest[i]) && indent_of(rest[i]) == 0 && !is_fence(rest[i])) {
        rest.resize(i);
        break;
      }
    }
  }
  while (!rest.empty() && blank(rest.back())) rest.pop_back();
  std::size_t common = std::string::npos;
  for (const auto& l : rest)
    if (!blank(l)) common = std::min(common, indent_of(l));
  if (common == std::string::npos) common = 0;
  std::string out = trim(first);
  for (const auto& l : rest) {
    out += "\n";
    if (blank(l)) continue;
    std::size_t drop = 0, seen = 0;
    while (drop < l.size() && seen < common && (l[drop] == ' ' || l[drop] == '\t')) seen += l[drop++] == '\t' ? 4 : 1;
    out += "   " + l.substr(drop);
  }
  static const std::regex runs_of_blank_lines("\n{3,}");
  return trim(std::regex_replace(out, runs_of_blank_lines, "\n\n"));
}

}  // namespace

std::vector<std::string> parse_recommendations(std::string_view reply, std::size_t max_items) {
  std::vector<Line> lines;
  {
    std::istringstream in{std::string(reply)};
    bool fence = false;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const bool opens_or_closes = is_fence(line);
      lines.push_back({line, fence || opens_or_closes});
      if (opens_or_closes) fence = !fence;
    }
  }
  std::vector<std::string> out;
  if (auto style = list_style(lines)) {
    struct Item {
      std::string first;
      std::vector<std::string> rest;
    };
    std::vector<Item> items;
    bool open = false;  // lines go to the last item
    for (const auto& l : lines) {
      if (!l.in_fence) {
        if (auto start = item_start(l.text, style->first, style->second)) {
          items.push_back({*start, {}});
          open = true;
          continue;
        }
        // Another heading ends the item (a "## Summary" after the list, a section between items).
        if (std::regex_search(l.text, kHeading)) {
          open = false;
          continue;
        }
      }
      if (open) items.back().rest.push_back(l.text);
    }
    for (std::size_t i = 0; i < items.size(); ++i) {
      std::string text = item_text(items[i].first, items[i].rest, i + 1 == items.size());
      if (!text.empty() && out.size() < max_items) out.push_back(text);
    }
  }
  if (out.empty()) {
    std::string text = trim(std::string(reply));
    if (text.size() > 1500) text = text.substr(0, 1500) + "...";
    if (!text.empty()) out.push_back(text);
  }
  return out;
}

}  // namespace kforge::agent
