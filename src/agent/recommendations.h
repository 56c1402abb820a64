// The performance-analysis agent answers with a short ranked list of recommendations; this pulls
// them out of the reply as written. The top-level items are numbered headings ("### 1. Fuse"),
// else numbered list items, else bullets, at the indentation of the first one; everything up to
// the next top-level item (nested lists, code blocks, paragraphs) stays in its recommendation, so
// the count is the analyst's. Prose before the first item, after a heading that is not an item,
// and at the margin after the last item is left out.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::agent {

// Up to `max_items` recommendations in the reply's order, each Markdown that reads right after
// "N. " (continuation lines indented by three spaces). A reply without a list counts as one
// recommendation (its text, shortened).
std::vector<std::string> parse_recommendations(std::string_view reply, std::size_t max_items = 10);

}  // namespace kforge::agent
