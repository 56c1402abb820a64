// The performance-analysis agent answers with a short ranked list of recommendations; this
// pulls the list items out of the reply (numbered or bulleted), whatever prose surrounds them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::agent {

// Up to `max_items` recommendations in the reply's order. A reply without a list counts as
// one recommendation (its text, shortened).
std::vector<std::string> parse_recommendations(std::string_view reply, std::size_t max_items = 6);

}  // namespace kforge::agent
