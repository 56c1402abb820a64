// Log level and format for the command-line tools.
#pragma once

#include "cli/global_options.h"

namespace kforge {

void setup_logging(const GlobalOptions& global);

}  // namespace kforge
