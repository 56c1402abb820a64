// Which target a kernel given to `kforge run --transfer-from` was written for, from what kforge
// recorded about it rather than from its text.
#pragma once

#include <string>

#include "store/store.h"

namespace kforge::loop {

// The line kforge writes at the top of a best.py: "# kforge target: <name>".
inline constexpr const char* kTargetMarker = "# kforge target: ";

// The target of the latest evaluation of exactly this source in `store`; else the target named by a
// kTargetMarker line in the file's leading comment block (a best.py kforge wrote); else "another".
std::string transfer_source_target(const Store& store, const std::string& source);

}  // namespace kforge::loop
