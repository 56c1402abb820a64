// `exec:COMMAND`: runs COMMAND through /bin/sh once per request, so any command-line tool
// can act as the model. The request JSON arrives on stdin; the reply is read from stdout
// (see docs/llm.md "exec: protocol").
#pragma once

#include <chrono>
#include <string>

#include "llm/cancel.h"
#include "llm/provider.h"
#include "llm/retry.h"

namespace kforge::llm {

struct ExecProviderOptions {
  std::string command;
  std::chrono::milliseconds timeout{std::chrono::seconds(900)};  // per run of the command
  RetryPolicy retry;  // applies when the command exits with 75 (EX_TEMPFAIL)
  int default_max_tokens = 8192;
  std::optional<double> temperature;
  const CancelFlag* cancel = nullptr;
};

inline constexpr int kExecTempFailExit = 75;

class ExecProvider : public Provider {
 public:
  explicit ExecProvider(ExecProviderOptions options);

  Response complete(const Request& request) override;
  std::string name() const override { return "exec:" + options_.command; }

 private:
  Response run_once(const Request& request, std::chrono::milliseconds budget);

  ExecProviderOptions options_;
};

}  // namespace kforge::llm
