// `manual:DIR`: a person (or an external tool) answers each request by hand. The request
// is written as DIR/request-NNNN.md (readable) and DIR/request-NNNN.json (canonical); the
// provider waits until DIR/reply-NNNN.md or DIR/reply-NNNN.json appears under its final
// name (write elsewhere, then rename) and prints on the terminal where to look.
//
// A request identical to one already in DIR whose reply has not been taken yet is not asked
// again: kforge waits on (or takes) that earlier request's reply. So a run that stopped at a
// missing reply continues, after `--resume`, with the reply written for the request it stopped
// at. Taken replies are listed in DIR/taken.txt (one request number per line).
#pragma once

#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <set>
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
  static constexpr const char* kTakenFile = "taken.txt";

 private:
  // The number of an untaken request in DIR whose JSON equals `json`, else a new number.
  int number_for(const std::string& json, bool* asked_before);
  void mark_taken(int number);

  ManualProviderOptions options_;
  std::mutex mutex_;
  int next_ = 1;
  std::set<int> taken_;    // replies already given to a call (this process or an earlier one)
  std::set<int> pending_;  // requests a call of this process is waiting on
};

}  // namespace kforge::llm
