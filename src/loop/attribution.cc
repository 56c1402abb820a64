#include "loop/attribution.h"

#include <algorithm>
#include <cctype>
#include <regex>

namespace kforge::loop {

using json = nlohmann::json;

std::vector<int> cited_recommendations(const std::string& text) {
  // A word that introduces recommendation numbers, then the numbers: lists ("1, 2 and 3", "#1, #4")
  // and ranges ("1-3", "2 to 4"). A number followed by a letter ("2 accumulators" is fine, "4x" is
  // not a citation) does not count.
  static const std::regex mention(
      R"((?:\brecommendations?|\brecs?\b\.?|\bitems?|\bappl(?:y|ies|ied|ying)(?:\s+(?:recommendations?|recs?\b\.?|items?))?|#)\s*)"
      R"((#?\d+(?![\w])(?:\s*(?:,|\band\b|&|\+|/|-|–|—|\bto\b|\bthrough\b)\s*#?\d+(?![\w]))*))",
      std::regex::icase);
  static const std::regex piece(R"(\d+|-|–|—|\bto\b|\bthrough\b)", std::regex::icase);
  std::vector<int> out;
  auto add = [&](int k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  for (auto it = std::sregex_iterator(text.begin(), text.end(), mention); it != std::sregex_iterator(); ++it) {
    const std::string list = (*it)[1].str();
    int previous = -1;
    bool range = false;
    for (auto p = std::sregex_iterator(list.begin(), list.end(), piece); p != std::sregex_iterator(); ++p) {
      const std::string token = p->str();
      if (!std::isdigit(static_cast<unsigned char>(token[0]))) {
        range = previous >= 0;
        continue;
      }
      const int k = std::stoi(token);
      if (range && k > previous && k - previous <= 50)
        for (int i = previous + 1; i <= k; ++i) add(i);
      else add(k);
      previous = k;
      range = false;
    }
  }
  return out;
}

json attribute_recommendations(const json& recommendations, const json& candidates) {
  json rows = json::array();
  for (const auto& [round_text, items] : recommendations.items()) {
    const int round = std::stoi(round_text);
    // The candidates of this round that were judged (correct ones) or failed, and what each cites.
    std::vector<std::pair<json, std::vector<int>>> tried;
    for (const auto& c : candidates)
      if (c.value("round", -1) == round) tried.emplace_back(c, cited_recommendations(c.value("idea", "")));
    int rank = 0;
    for (const auto& item : items) {
      ++rank;
      json row = {{"round", round}, {"rank", rank}, {"text", item}, {"tried_by", json::array()}, {"paid_off", false}};
      for (const auto& [c, cited] : tried) {
        const bool names_it = std::find(cited.begin(), cited.end(), rank) != cited.end();
        if (!cited.empty() && !names_it) continue;
        const std::string decision = c.value("decision", c.value("status", ""));
        row["tried_by"].push_back({{"step", c.value("step", "")},
                                   {"decision", decision},
                                   {"vs_best", c.value("vs_best", json())},
                                   {"cited", names_it}});
        // Credit only advice that was tried: a candidate citing nothing may have followed any of
        // several recommendations, so it pays off none of them (unless there was only one).
        if (decision == "accepted" && (names_it || items.size() == 1)) row["paid_off"] = true;
      }
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace kforge::loop
