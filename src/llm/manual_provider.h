// `manual:DIR`: a person (or an external tool) answers each request by hand. The request
// is written as DIR/request-NNNN.md (readable) and DIR/request-NNNN.json (canonical); the
// provider waits until DIR/reply-NNNN.md or DIR/reply-NNNN.json appears under its final
// name (write elsewhere, then rename) and prints on the terminal where to look.
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>

#include "llm/cancel.h"
#include "llm/provider.h"

namespace kforge::llm {

struct ManualProviderOptions {
  std::filesystem::path dir;
  std::chrono::milliseconds poll_interval{500};
  std::chrono::milliseconds timeout{0};  // 0: wait until a reply or Ctrl-C
  int default_max_tokens = 8192;
  const CancelFlag* cancel = nullptr;
  // Receives the "waiting for the reply" message; default: printed on stderr.
  std::function<void(const std::string&)> notify;
};

class ManualProvider : public Provider {
 public:
  // Creates DIR if needed; numbering continues after the highest request-NNNN already there.
  explicit ManualProvider(ManualProviderOptions options);

  Response complete(const Request& request) override;
  std::string name() const override { return "manual:" + options_.dir.string(); }

  static std::string request_stem(int number);  // "request-0007"
  static std::string reply_stem(int number);    // "reply-0007"

 private:
  ManualProviderOptions options_;
  std::mutex mutex_;
  int next_ = 1;
};

}  // namespace kforge::llm
