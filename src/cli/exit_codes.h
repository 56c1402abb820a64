// Process exit codes shared by every subcommand (README "Exit codes", docs/eval-result.md).
#pragma once

namespace kforge {

enum ExitCode : int {
  kExitOk = 0,           // success; for eval: the candidate is correct
  kExitFailed = 1,       // the candidate failed (compile error, incorrect, rejected, ...)
  kExitUsage = 2,        // usage or input error: one clear line on stderr; for eval: the problem is at fault
  kExitInternal = 3,     // kforge itself failed
  kExitEnvironment = 4,  // this machine cannot evaluate: no torch in the interpreter, no GPU for the target, ...
};

struct ExitCodeDoc {
  int code;
  const char* meaning;
};

// For the man page and `--help`.
inline constexpr ExitCodeDoc kExitCodeDocs[] = {
    {kExitOk, "Success; for eval, every candidate is correct."},
    {kExitFailed, "A candidate failed (compile error, incorrect, rejected, timeout), or a run or bench was interrupted."},
    {kExitUsage, "A usage or input error (one line on standard error), or the reference problem itself failed."},
    {kExitInternal, "kforge itself failed."},
    {kExitEnvironment,
     "This machine cannot evaluate: the interpreter has no torch, the target needs a GPU it lacks, a worker could not "
     "start (`kforge doctor' says what to fix)."},
};

}  // namespace kforge
