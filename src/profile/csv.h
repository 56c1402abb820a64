// A reader for comma-separated values as RFC 4180 defines them (quoted fields, doubled quotes,
// commas and line breaks inside quotes, CRLF or LF line ends), as Nsight Compute writes them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kforge::profile {

using CsvRow = std::vector<std::string>;

// Every record of `text`; blank lines are skipped. Throws InputError on a quote left open.
std::vector<CsvRow> parse_csv(std::string_view text);

}  // namespace kforge::profile
