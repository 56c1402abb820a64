// Escaping text for HTML and SVG (XML) documents that kforge writes.
#pragma once

#include <string>

namespace kforge {

// `s` with &, <, >, " and ' replaced by entities: safe in element text and in quoted attributes.
std::string escape_markup(const std::string& s);

}  // namespace kforge
