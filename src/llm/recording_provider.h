// `--record FILE`: a decorator that appends every completed call (request and reply) to a
// JSONL transcript that replay: can read back. The file is started afresh when the
// provider is created. Lines pass through redact_secrets() before they are written.
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#include "llm/provider.h"

namespace kforge::llm {

class RecordingProvider : public Provider {
 public:
  // Throws InputError when the file cannot be created.
  RecordingProvider(std::unique_ptr<Provider> inner, const std::filesystem::path& path);

  Response complete(const Request& request) override;
  std::string name() const override { return inner_->name(); }
  void answered_from_store(const Request& request, const Response& response) override;

 private:
  void write(const Request& request, const Response& response);

  std::unique_ptr<Provider> inner_;
  std::filesystem::path path_;
  std::mutex mutex_;
  std::ofstream out_;
  int seq_ = 0;
};

}  // namespace kforge::llm
