// Process exit codes shared by every subcommand.
#pragma once

namespace kforge {

enum ExitCode : int {
  kExitOk = 0,         // success; for eval: the candidate is correct
  kExitFailed = 1,     // the candidate failed (compile error, incorrect, rejected, ...)
  kExitUsage = 2,      // usage or input error: one clear line on stderr
  kExitInternal = 3,   // kforge itself failed
};

}  // namespace kforge
