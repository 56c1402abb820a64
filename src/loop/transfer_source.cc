#include "loop/transfer_source.h"

#include <sstream>

#include "util/hash.h"

namespace kforge::loop {

std::string transfer_source_target(const Store& store, const std::string& source) {
  auto evaluations = store.evaluations_of(sha256_hex(source));
  for (auto it = evaluations.rbegin(); it != evaluations.rend(); ++it)
    if (auto t = it->result.find("target"); t != it->result.end() && t->is_string() && !t->get<std::string>().empty())
      return t->get<std::string>();
  const std::string marker = kTargetMarker;
  std::stringstream lines(source);
  for (std::string line; std::getline(lines, line) && line.rfind("#", 0) == 0;)
    if (line.rfind(marker, 0) == 0) {
      std::string name = line.substr(marker.size());
      while (!name.empty() && (name.back() == ' ' || name.back() == '\r')) name.pop_back();
      if (!name.empty() && name.find(' ') == std::string::npos) return name;
    }
  return "another";
}

}  // namespace kforge::loop
