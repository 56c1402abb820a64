// Helpers shared by the llm tests: an in-process HTTP server on 127.0.0.1 (ephemeral
// port), temporary directories, scoped environment variables and fast retry settings.
#pragma once

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "llm/http_provider.h"
#include "llm/settings.h"

namespace kforge::llm::testing {

class FakeServer {
 public:
  explicit FakeServer(const std::function<void(httplib::Server&, FakeServer&)>& setup) {
    setup(server_, *this);
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() is a no-op until the accept loop runs, so do not hand out the server before.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeServer() {
    released_ = true;
    server_.stop();
    thread_.join();
  }
  std::string base_url(std::string_view path = "") const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
  }
  int port() const { return port_; }
  // Handlers that hang poll this so the server can shut down promptly.
  bool released() const { return released_; }
  void hang(std::chrono::milliseconds at_most = std::chrono::seconds(5)) const {
    auto until = std::chrono::steady_clock::now() + at_most;
    while (!released_ && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  std::atomic<int> hits{0};

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::atomic<bool> released_{false};
};

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "kforge-llm-test-XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(std::string_view name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_.c_str(), old_->c_str(), 1);
    else
      unsetenv(name_.c_str());
  }

 private:
  std::string name_;
  std::optional<std::string> old_;
};

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_file(const std::filesystem::path& path, std::string_view text, int mode = 0600) {
  std::ofstream(path, std::ios::binary) << text;
  ::chmod(path.c_str(), static_cast<mode_t>(mode));
}

inline RetryPolicy fast_retry(int attempts = 3) {
  RetryPolicy r;
  r.max_attempts = attempts;
  r.base_delay = std::chrono::milliseconds(10);
  r.max_delay = std::chrono::milliseconds(50);
  r.max_total = std::chrono::seconds(10);
  return r;
}

inline HttpTimeouts fast_timeouts() {
  HttpTimeouts t;
  t.connect = std::chrono::milliseconds(1000);
  t.read = std::chrono::milliseconds(300);
  t.request = std::chrono::seconds(5);
  return t;
}

inline LlmSettings fast_settings() {
  LlmSettings s;
  s.timeouts = fast_timeouts();
  s.retry = fast_retry();
  s.max_tokens = 128;
  s.manual_poll = std::chrono::milliseconds(10);
  s.exec_timeout = std::chrono::seconds(5);
  return s;
}

inline HttpProviderOptions fast_http_options(const std::string& base_url, const std::string& key = "test-key-123456") {
  HttpProviderOptions o;
  o.model = "test-model";
  o.base_url = base_url;
  o.api_key = key;
  o.timeouts = fast_timeouts();
  o.retry = fast_retry();
  o.default_max_tokens = 128;
  return o;
}

inline std::string openai_reply(std::string_view text, int in = 11, int out = 7) {
  return nlohmann::json({{"id", "chatcmpl-1"},
                         {"object", "chat.completion"},
                         {"model", "test-model-2024"},
                         {"choices",
                          {{{"index", 0},
                            {"message", {{"role", "assistant"}, {"content", text}}},
                            {"finish_reason", "stop"}}}},
                         {"usage", {{"prompt_tokens", in}, {"completion_tokens", out}, {"total_tokens", in + out}}}})
      .dump();
}

inline std::string anthropic_reply(std::string_view text, int in = 13, int out = 5) {
  return nlohmann::json({{"id", "msg_1"},
                         {"type", "message"},
                         {"role", "assistant"},
                         {"model", "claude-test"},
                         {"content", {{{"type", "text"}, {"text", text}}}},
                         {"stop_reason", "end_turn"},
                         {"usage", {{"input_tokens", in}, {"output_tokens", out}}}})
      .dump();
}

}  // namespace kforge::llm::testing
