// Error kinds that map onto kforge's exit codes (see src/cli/exit_codes.h).
#pragma once

#include <stdexcept>
#include <string>

namespace kforge {

// Bad input from the user: missing file, unknown target, malformed config. Exit code 2.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Something inside kforge failed that is neither the user's input nor the candidate. Exit code 3.
class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace kforge
