// RecordingProvider (see recording_provider.h).
#include "llm/recording_provider.h"

#include <fmt/format.h>

#include "llm/normalize.h"
#include "llm/secrets.h"
#include "llm/transcript.h"
#include "util/errors.h"

namespace kforge::llm {

RecordingProvider::RecordingProvider(std::unique_ptr<Provider> inner, const std::filesystem::path& path)
    : inner_(std::move(inner)), path_(path) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  out_.open(path, std::ios::binary | std::ios::trunc);
  if (!out_) throw InputError(fmt::format("--record: cannot create {}", path.string()));
}

Response RecordingProvider::complete(const Request& request) {
  Response response = inner_->complete(request);
  write(request, response);
  return response;
}

void RecordingProvider::answered_from_store(const Request& request, const Response& response) {
  inner_->answered_from_store(request, response);
  write(request, response);
}

void RecordingProvider::write(const Request& request, const Response& response) {
  TranscriptEntry entry;
  entry.request = request;
  entry.response = response;
  entry.key = request_key(request);
  std::lock_guard lock(mutex_);
  entry.seq = seq_++;
  out_ << redact_secrets(encode_transcript_entry(entry)) << '\n';
  out_.flush();
  if (!out_) throw InputError(fmt::format("--record: cannot write {}", path_.string()));
}

}  // namespace kforge::llm
