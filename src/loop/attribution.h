// Which advice paid off: each recommendation of the performance analysis linked to the candidates
// generated from it, with what was decided about them and their measured ratio to the best. A
// candidate that names the recommendations it applied ("recommendation 2", "Applies 1, 2 and 3",
// "Applied 1-3") is linked to those; one that names none is linked to every recommendation of its
// round but credited with none of them (unless its round had only one): only what was tried pays off.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::loop {

// Numbers of the recommendations a line cites ("recommendation 2", "recommendations 1 and 3", "#2",
// "Applies 1, 2 and 3", "Applied 1-3", "recs 2 to 4").
std::vector<int> cited_recommendations(const std::string& text);

// `recommendations`: {round: [text, ...]}; `candidates`: the summary's candidate rows (round, step,
// idea, decision, vs_best). Rows {round, rank, text, tried_by: [{step, decision, vs_best, cited}], paid_off}.
nlohmann::json attribute_recommendations(const nlohmann::json& recommendations, const nlohmann::json& candidates);

}  // namespace kforge::loop
