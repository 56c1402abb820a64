#include "loop/attribution.h"

#include <algorithm>
#include <regex>

namespace kforge::loop {

using json = nlohmann::json;

std::vector<int> cited_recommendations(const std::string& text) {
  static const std::regex mention(R"((?:recommendations?|rec\.|#)\s*((?:\d+(?:\s*(?:,|and|&|\+)\s*)?)+))",
                                  std::regex::icase);
  static const std::regex number(R"(\d+)");
  std::vector<int> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), mention); it != std::sregex_iterator(); ++it) {
    const std::string nums = (*it)[1].str();
    for (auto n = std::sregex_iterator(nums.begin(), nums.end(), number); n != std::sregex_iterator(); ++n) {
      int k = std::stoi(n->str());
      if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
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
        if (decision == "accepted") row["paid_off"] = true;
      }
      rows.push_back(row);
    }
  }
  return rows;
}

}  // namespace kforge::loop
