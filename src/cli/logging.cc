#include "cli/logging.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace kforge {

void setup_logging(const GlobalOptions& global) {
  static bool done = false;
  if (!done) {
    // Logs go to stderr so stdout carries only results.
    auto logger = spdlog::stderr_color_mt("kforge");
    logger->set_pattern("%H:%M:%S %^%l%$ %v");
    spdlog::set_default_logger(logger);
    done = true;
  }
  spdlog::set_level(global.verbose ? spdlog::level::debug : global.quiet ? spdlog::level::warn : spdlog::level::info);
}

}  // namespace kforge
