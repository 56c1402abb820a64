// libcurl wrapper (see http_client.h). Uses the multi interface so the wait loop can
// check the cancellation flag and the inactivity deadline every few milliseconds; the
// progress callback checks the flag as well.
#include "llm/http_client.h"

#include <algorithm>
#include <cctype>
#include <mutex>

#include <curl/curl.h>
#include <fmt/format.h>

#include "llm/errors.h"

namespace kforge::llm {

namespace {

using clock = std::chrono::steady_clock;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string trim(std::string_view s) {
  auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

struct Transfer {
  HttpResponse response;
  clock::time_point last_activity = clock::now();
  curl_off_t last_uploaded = 0;
  const CancelFlag* cancel = nullptr;
};

size_t on_body(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  t->response.body.append(data, size * count);
  t->last_activity = clock::now();
  return size * count;
}

size_t on_header(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * count);
  t->last_activity = clock::now();
  if (line.starts_with("HTTP/")) {
    t->response.headers.clear();  // a new response (after 100-continue or a redirect)
  } else if (auto colon = line.find(':'); colon != std::string_view::npos) {
    t->response.headers.emplace_back(lower(trim(line.substr(0, colon))), trim(line.substr(colon + 1)));
  }
  return size * count;
}

int on_progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t ulnow) {
  auto* t = static_cast<Transfer*>(user);
  if (ulnow != t->last_uploaded) {
    t->last_uploaded = ulnow;
    t->last_activity = clock::now();
  }
  return is_cancelled(t->cancel) ? 1 : 0;
}

void global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct EasyDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
};
struct MultiDeleter {
  void operator()(CURLM* m) const { curl_multi_cleanup(m); }
};
struct SlistDeleter {
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

// Scheme, host and port of `url`, for messages (never the query string).
std::string describe_url(const std::string& url) {
  auto scheme = url.find("://");
  auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

long ms(std::chrono::milliseconds d) { return static_cast<long>(std::max<std::int64_t>(1, d.count())); }

}  // namespace

std::optional<std::string> HttpResponse::header(std::string_view name) const {
  std::string key = lower(name);
  std::optional<std::string> found;
  for (const auto& [k, v] : headers)
    if (k == key) found = v;
  return found;
}

HttpResponse http_post(const HttpRequest& request, const HttpTimeouts& timeouts, const CancelFlag* cancel) {
  global_init();
  throw_if_cancelled(cancel);

  std::unique_ptr<CURL, EasyDeleter> easy(curl_easy_init());
  std::unique_ptr<CURLM, MultiDeleter> multi(curl_multi_init());
  if (!easy || !multi) throw LlmError(ErrorKind::kNetwork, "could not initialise libcurl");

  curl_slist* raw_list = nullptr;
  for (const auto& [name, value] : request.headers)
    raw_list = curl_slist_append(raw_list, fmt::format("{}: {}", name, value).c_str());
  raw_list = curl_slist_append(raw_list, "Expect:");  // no 100-continue round trip
  std::unique_ptr<curl_slist, SlistDeleter> header_list(raw_list);

  Transfer transfer;
  transfer.cancel = cancel;
  CURL* c = easy.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_POST, 1L);
  curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
  curl_easy_setopt(c, CURLOPT_POSTFIELDS, request.body.data());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, header_list.get());
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &transfer);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &transfer);
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms(timeouts.connect));
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms(timeouts.request));
  curl_easy_setopt(c, CURLOPT_ACCEPT_ENCODING, "");
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(c, CURLOPT_USERAGENT, "kforge/0.1");

  curl_multi_add_handle(multi.get(), c);
  bool cancelled = false;
  bool read_timed_out = false;
  int running = 1;
  while (running) {
    CURLMcode mc = curl_multi_perform(multi.get(), &running);
    if (mc != CURLM_OK) break;
    if (!running) break;
    if (is_cancelled(cancel)) {
      cancelled = true;
      break;
    }
    if (clock::now() - transfer.last_activity > timeouts.read) {
      read_timed_out = true;
      break;
    }
    curl_multi_poll(multi.get(), nullptr, 0, 20, nullptr);
  }

  CURLcode result = CURLE_OK;
  int pending = 0;
  bool finished = false;
  while (CURLMsg* msg = curl_multi_info_read(multi.get(), &pending)) {
    if (msg->msg == CURLMSG_DONE) {
      result = msg->data.result;
      finished = true;
    }
  }
  curl_multi_remove_handle(multi.get(), c);

  const std::string where = describe_url(request.url);
  if (cancelled || result == CURLE_ABORTED_BY_CALLBACK)
    throw LlmError(ErrorKind::kCancelled, "interrupted (Ctrl-C)");
  if (read_timed_out)
    throw LlmError(ErrorKind::kTimeout,
                   fmt::format("{} sent nothing for {:.1f} s (read timeout, [llm.timeouts] read_s)", where,
                               timeouts.read.count() / 1000.0),
                   true);
  if (!finished) throw LlmError(ErrorKind::kNetwork, fmt::format("transfer to {} failed inside libcurl", where), true);

  switch (result) {
    case CURLE_OK: break;
    case CURLE_OPERATION_TIMEDOUT: {
      curl_off_t connected = 0;
      curl_easy_getinfo(c, CURLINFO_CONNECT_TIME_T, &connected);
      throw LlmError(ErrorKind::kTimeout,
                     connected == 0
                         ? fmt::format("could not connect to {} within {:.1f} s ([llm.timeouts] connect_s)", where,
                                       timeouts.connect.count() / 1000.0)
                         : fmt::format("{} did not finish the reply within {:.1f} s ([llm.timeouts] request_s)",
                                       where, timeouts.request.count() / 1000.0),
                     true);
    }
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_URL_MALFORMAT:
      throw LlmError(ErrorKind::kConfig,
                     fmt::format("invalid URL '{}': {}; check --llm-base-url or [llm] base_url", where,
                                 curl_easy_strerror(result)));
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
      throw LlmError(ErrorKind::kConfig,
                     fmt::format("TLS verification of {} failed: {}", where, curl_easy_strerror(result)));
    default:
      throw LlmError(ErrorKind::kNetwork,
                     fmt::format("request to {} failed: {}", where, curl_easy_strerror(result)), true);
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &transfer.response.status);
  return std::move(transfer.response);
}

}  // namespace kforge::llm
