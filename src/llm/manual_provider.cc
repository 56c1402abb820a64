// manual: provider (see manual_provider.h).
#include "llm/manual_provider.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "llm/errors.h"
#include "llm/markdown.h"
#include "llm/reply_format.h"
#include "util/errors.h"

namespace kforge::llm {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string ManualProvider::request_stem(int number) { return fmt::format("request-{:04d}", number); }
std::string ManualProvider::reply_stem(int number) { return fmt::format("reply-{:04d}", number); }

ManualProvider::ManualProvider(ManualProviderOptions options) : options_(std::move(options)) {
  std::error_code ec;
  fs::create_directories(options_.dir, ec);
  if (ec || !fs::is_directory(options_.dir))
    throw InputError(fmt::format("manual: cannot create directory {}: {}", options_.dir.string(), ec.message()));
  options_.dir = fs::absolute(options_.dir);
  for (const auto& entry : fs::directory_iterator(options_.dir)) {
    const std::string name = entry.path().filename().string();
    int number = 0;
    if (std::sscanf(name.c_str(), "request-%d.json", &number) == 1 && number >= next_) next_ = number + 1;
  }
  std::ifstream taken(options_.dir / kTakenFile);
  for (int number = 0; taken >> number;) taken_.insert(number);
  if (!options_.notify) options_.notify = [](const std::string& text) { std::fputs(text.c_str(), stderr); };
}

int ManualProvider::number_for(const std::string& json, bool* asked_before) {
  std::lock_guard lock(mutex_);
  for (int number = 1; number < next_; ++number) {
    if (taken_.count(number) || pending_.count(number)) continue;
    std::error_code ec;
    const fs::path path = options_.dir / (request_stem(number) + ".json");
    // The size first: only a request of the same length is read and compared.
    if (fs::file_size(path, ec) == json.size() && !ec && read_file(path) == json) {
      pending_.insert(number);
      *asked_before = true;
      return number;
    }
  }
  *asked_before = false;
  pending_.insert(next_);
  return next_++;
}

void ManualProvider::mark_taken(int number) {
  std::lock_guard lock(mutex_);
  pending_.erase(number);
  taken_.insert(number);
  std::ofstream(options_.dir / kTakenFile, std::ios::app) << number << "\n";
}

Response ManualProvider::complete(const Request& request) {
  throw_if_cancelled(options_.cancel);
  const auto start = clock::now();
  Request effective = as_sent(request);
  if (effective.max_tokens <= 0) effective.max_tokens = options_.default_max_tokens;
  const std::string json = request_to_json(effective).dump(2) + "\n";
  bool asked_before = false;
  const int number = number_for(json, &asked_before);
  // A call that ends without a reply leaves the request untaken, for the next identical one.
  struct Unpend {
    ManualProvider* self;
    int number;
    ~Unpend() {
      std::lock_guard lock(self->mutex_);
      self->pending_.erase(number);
    }
  } unpend{this, number};

  const std::string stem = request_stem(number);
  const fs::path reply_md = options_.dir / (reply_stem(number) + ".md");
  const fs::path reply_json = options_.dir / (reply_stem(number) + ".json");
  const std::string preamble = fmt::format(
      "<!-- kforge request {0}. Answer it as the model would: write the reply text to {1}.md in this directory, "
      "or a JSON object to {1}.json (see docs/llm.md). Save under another name first, then rename, so kforge never "
      "reads half a file. -->",
      number, reply_stem(number));
  if (!asked_before) {
    auto images = write_request_images(effective, options_.dir, stem);
    write_file_atomically(options_.dir / (stem + ".json"), json);
    write_file_atomically(options_.dir / (stem + ".md"), render_markdown(effective, images, preamble));
  }

  options_.notify(fmt::format(
      "kforge: waiting for a reply to request {}{} (manual provider)\n"
      "  prompt: {}\n"
      "  reply:  write the answer to {}\n"
      "          (or JSON to {}); write it under another name, then rename it into place\n"
      "  Ctrl-C stops kforge.\n",
      number, asked_before ? ", asked before" : "", (options_.dir / (stem + ".md")).string(), reply_md.string(),
      reply_json.filename().string()));

  const auto deadline = start + options_.timeout;
  while (true) {
    std::error_code ec;
    const bool as_json = fs::exists(reply_json, ec);
    if (as_json || fs::exists(reply_md, ec)) {
      Response response = as_json ? parse_reply_json(read_file(reply_json), reply_json.string())
                                  : parse_reply(read_file(reply_md), reply_md.string());
      response.latency = std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - start);
      if (response.model.empty()) response.model = "manual";
      response.provider = name();
      mark_taken(number);
      return response;
    }
    if (options_.timeout.count() > 0 && clock::now() >= deadline)
      throw LlmError(ErrorKind::kTimeout,
                     fmt::format("manual: no reply to request {} after {:.1f} s ([llm.manual] timeout_s); expected {}",
                                 number, options_.timeout.count() / 1000.0, reply_md.string()));
    if (!sleep_unless_cancelled(options_.poll_interval, options_.cancel)) throw_if_cancelled(options_.cancel);
  }
}

}  // namespace kforge::llm
