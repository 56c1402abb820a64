// OpenAI Chat Completions client against an in-process fake server: wire format,
// streaming, and the injected faults the retry layer must survive or report.
#include "llm/openai_provider.h"

#include <gtest/gtest.h>

#include "llm/errors.h"
#include "llm/test_support.h"

namespace kforge::llm {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;
using testing::FakeServer;

Request hello() {
  Request r;
  r.messages.push_back(Message::text(Role::kSystem, "You write kernels."));
  r.messages.push_back(Message::text(Role::kUser, "Say hi"));
  return r;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(OpenAIProvider, SendsChatCompletionsRequestAndParsesReply) {
  json seen;
  std::string auth, path;
  FakeServer server([&](httplib::Server& s, FakeServer&) {
    s.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      seen = json::parse(req.body);
      auth = req.get_header_value("Authorization");
      res.set_content(testing::openai_reply("hi there"), "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1/")));
  Response r = provider.complete(hello());

  EXPECT_EQ(auth, "Bearer test-key-123456");
  EXPECT_EQ(seen["model"], "test-model");
  EXPECT_EQ(seen["max_tokens"], 128);  // not api.openai.com: max_tokens
  EXPECT_FALSE(seen.contains("temperature"));
  ASSERT_EQ(seen["messages"].size(), 2u);
  EXPECT_EQ(seen["messages"][0]["role"], "system");
  EXPECT_EQ(seen["messages"][1]["content"], "Say hi");

  EXPECT_EQ(r.text, "hi there");
  EXPECT_EQ(r.usage.input_tokens, 11);
  EXPECT_EQ(r.usage.output_tokens, 7);
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.model, "test-model-2024");
  EXPECT_EQ(r.provider, "openai:test-model");
  EXPECT_EQ(r.attempts, 1);
  EXPECT_GE(r.latency.count(), 0);
}

TEST(OpenAIProvider, ImagesBecomeDataUrlParts) {
  auto options = testing::fast_http_options("https://api.openai.com/v1");
  options.temperature = 0.25;
  OpenAIProvider provider(options);
  Request r;
  Message m = Message::text(Role::kUser, "What is in the picture?");
  m.content.push_back(ContentPart::image_part("image/png", "iVBORw0KGgo="));
  r.messages.push_back(m);
  json body = provider.request_body(r);
  EXPECT_EQ(body["max_completion_tokens"], 128);  // api.openai.com: reasoning models need this field
  EXPECT_EQ(body["temperature"], 0.25);
  const json& parts = body["messages"][0]["content"];
  ASSERT_TRUE(parts.is_array());
  EXPECT_EQ(parts[0]["type"], "text");
  EXPECT_EQ(parts[1]["type"], "image_url");
  EXPECT_EQ(parts[1]["image_url"]["url"], "data:image/png;base64,iVBORw0KGgo=");
}

TEST(OpenAIProvider, NoKeyMeansNoAuthorizationHeader) {
  bool had_auth = true;
  FakeServer server([&](httplib::Server& s, FakeServer&) {
    s.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      had_auth = req.has_header("Authorization");
      res.set_content(testing::openai_reply("ok"), "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1"), ""));
  provider.complete(hello());
  EXPECT_FALSE(had_auth);
}

TEST(OpenAIProvider, Streaming) {
  json seen;
  FakeServer server([&](httplib::Server& s, FakeServer&) {
    s.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      seen = json::parse(req.body);
      std::string body =
          "data: {\"model\":\"m-1\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
          "data: {\"model\":\"m-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n"
          ": keep-alive\n\n"
          "data: {\"model\":\"m-1\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"length\"}]}\n\n"
          "data: {\"model\":\"m-1\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n"
          "data: [DONE]\n\n";
      res.set_content(body, "text/event-stream");
    });
  });
  auto options = testing::fast_http_options(server.base_url("/v1"));
  options.stream = true;
  OpenAIProvider provider(options);
  Response r = provider.complete(hello());
  EXPECT_EQ(seen["stream"], true);
  EXPECT_EQ(seen["stream_options"]["include_usage"], true);
  EXPECT_EQ(r.text, "Hello");
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.usage.input_tokens, 5);
  EXPECT_EQ(r.usage.output_tokens, 2);
  EXPECT_EQ(r.model, "m-1");
}

TEST(OpenAIProvider, StreamCutBeforeDoneIsRetried) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      if (++self.hits == 1) {
        res.set_content("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n", "text/event-stream");
      } else {
        res.set_content(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n"
            "data: [DONE]\n\n",
            "text/event-stream");
      }
    });
  });
  auto options = testing::fast_http_options(server.base_url("/v1"));
  options.stream = true;
  OpenAIProvider provider(options);
  Response r = provider.complete(hello());
  EXPECT_EQ(r.text, "ok");
  EXPECT_EQ(r.attempts, 2);
}

TEST(OpenAIProvider, RateLimitHonoursRetryAfter) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      if (++self.hits == 1) {
        res.status = 429;
        res.set_header("Retry-After", "1");
        res.set_content(R"({"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}})",
                        "application/json");
        return;
      }
      res.set_content(testing::openai_reply("after wait"), "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
  auto start = std::chrono::steady_clock::now();
  Response r = provider.complete(hello());
  double elapsed = seconds_since(start);
  EXPECT_EQ(r.text, "after wait");
  EXPECT_EQ(r.attempts, 2);
  EXPECT_GE(elapsed, 0.95);  // the server's 1 s, not the 10 ms test backoff
  EXPECT_LT(elapsed, 3.0);
}

TEST(OpenAIProvider, RetryAfterBeyondBudgetGivesUpAtOnce) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      ++self.hits;
      res.status = 429;
      res.set_header("Retry-After", "120");
      res.set_content(R"({"error":{"message":"slow down"}})", "application/json");
    });
  });
  auto options = testing::fast_http_options(server.base_url("/v1"));
  options.retry.max_total = 2s;
  OpenAIProvider provider(options);
  auto start = std::chrono::steady_clock::now();
  try {
    provider.complete(hello());
    FAIL() << "expected an error";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kRateLimited);
    EXPECT_NE(std::string(e.what()).find("asked to wait 120.0 s"), std::string::npos) << e.what();
  }
  EXPECT_LT(seconds_since(start), 2.0);
  EXPECT_EQ(server.hits, 1);
}

TEST(OpenAIProvider, ServerErrorThenSuccess) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      if (++self.hits == 1) {
        res.status = 500;
        res.set_content(R"({"error":{"message":"internal"}})", "application/json");
        return;
      }
      res.set_content(testing::openai_reply("recovered"), "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
  Response r = provider.complete(hello());
  EXPECT_EQ(r.text, "recovered");
  EXPECT_EQ(r.attempts, 2);
}

TEST(OpenAIProvider, PersistentServerErrorStopsAtMaxAttempts) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      ++self.hits;
      res.status = 503;
      res.set_content("<html>Service Unavailable</html>", "text/html");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
  try {
    provider.complete(hello());
    FAIL() << "expected an error";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kServer);
    EXPECT_EQ(e.http_status(), 503);
    EXPECT_NE(std::string(e.what()).find("3 attempts"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("Service Unavailable"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.hits, 3);
}

TEST(OpenAIProvider, HangPastReadTimeoutIsBounded) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      ++self.hits;
      self.hang();
      res.set_content(testing::openai_reply("too late"), "application/json");
    });
  });
  auto options = testing::fast_http_options(server.base_url("/v1"));
  options.retry.max_attempts = 2;
  OpenAIProvider provider(options);
  auto start = std::chrono::steady_clock::now();
  try {
    provider.complete(hello());
    FAIL() << "expected a timeout";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout);
    EXPECT_NE(std::string(e.what()).find("read timeout"), std::string::npos) << e.what();
  }
  double elapsed = seconds_since(start);
  EXPECT_GE(elapsed, 0.6);  // two attempts of 0.3 s each
  EXPECT_LT(elapsed, 2.5);  // bounded: not the 5 s the server would hang
  EXPECT_EQ(server.hits, 2);
}

TEST(OpenAIProvider, CutConnectionIsRetried) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      if (++self.hits == 1) {
        // Promise 1000 bytes, send a few, then drop the connection.
        res.set_content_provider(1000, "application/json", [](size_t offset, size_t, httplib::DataSink& sink) {
          if (offset == 0) sink.write("{\"choices\":[", 12);
          return false;
        });
        return;
      }
      res.set_content(testing::openai_reply("second try"), "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
  Response r = provider.complete(hello());
  EXPECT_EQ(r.text, "second try");
  EXPECT_EQ(r.attempts, 2);
}

TEST(OpenAIProvider, InvalidJsonIsReportedAfterRetries) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      ++self.hits;
      res.set_content("{\"choices\": [ this is not json", "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
  try {
    provider.complete(hello());
    FAIL() << "expected an error";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kMalformed);
    EXPECT_NE(std::string(e.what()).find("not JSON"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.hits, 3);
}

TEST(OpenAIProvider, UnauthorizedIsNotRetriedAndNamesTheKey) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      ++self.hits;
      res.status = 401;
      res.set_content(R"({"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}})",
                      "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
  try {
    provider.complete(hello());
    FAIL() << "expected an error";
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAuth);
    EXPECT_TRUE(is_user_error(e.kind()));
    std::string what = e.what();
    EXPECT_NE(what.find("OPENAI_API_KEY"), std::string::npos) << what;
    EXPECT_NE(what.find("Incorrect API key provided"), std::string::npos) << what;
  }
  EXPECT_EQ(server.hits, 1);
}

TEST(OpenAIProvider, ClientErrorsAreNotRetried) {
  for (int status : {400, 403, 404}) {
    FakeServer server([&](httplib::Server& s, FakeServer& self) {
      s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
        ++self.hits;
        res.status = status;
        res.set_content(R"({"error":{"message":"nope"}})", "application/json");
      });
    });
    OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
    try {
      provider.complete(hello());
      FAIL() << "expected an error for " << status;
    } catch (const LlmError& e) {
      EXPECT_EQ(e.http_status(), status);
      EXPECT_TRUE(is_user_error(e.kind())) << status;
    }
    EXPECT_EQ(server.hits, 1) << status;
  }
}

TEST(OpenAIProvider, QuotaExhaustedIsNotRetried) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      ++self.hits;
      res.status = 429;
      res.set_content(R"({"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}})",
                      "application/json");
    });
  });
  OpenAIProvider provider(testing::fast_http_options(server.base_url("/v1")));
  try {
    provider.complete(hello());
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kQuota);
  }
  EXPECT_EQ(server.hits, 1);
}

TEST(OpenAIProvider, ConnectionRefusedIsANetworkError) {
  int port;
  { FakeServer probe([](httplib::Server&, FakeServer&) {}); port = probe.port(); }
  auto options = testing::fast_http_options("http://127.0.0.1:" + std::to_string(port) + "/v1");
  options.retry.max_attempts = 2;
  OpenAIProvider provider(options);
  try {
    provider.complete(hello());
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kNetwork);
    EXPECT_NE(std::string(e.what()).find("2 attempts"), std::string::npos) << e.what();
  }
}

TEST(OpenAIProvider, CancelFlagStopsAHangingRequest) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      self.hang();
      res.set_content(testing::openai_reply("late"), "application/json");
    });
  });
  CancelFlag cancel{false};
  auto options = testing::fast_http_options(server.base_url("/v1"));
  options.timeouts.read = 10s;
  options.cancel = &cancel;
  OpenAIProvider provider(options);
  std::thread stopper([&] {
    std::this_thread::sleep_for(200ms);
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  try {
    provider.complete(hello());
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
  stopper.join();
  EXPECT_LT(seconds_since(start), 2.0);
}

TEST(OpenAIProvider, InBandErrorObjectIsAServerError) {
  EXPECT_THROW(parse_openai_completion(R"({"error":{"message":"upstream failed"}})"), LlmError);
  EXPECT_THROW(parse_openai_completion(""), LlmError);
  EXPECT_THROW(parse_openai_completion(R"({"choices":[]})"), LlmError);
  Response r = parse_openai_completion(
      R"({"choices":[{"message":{"role":"assistant","content":null},"finish_reason":"content_filter"}]})");
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(r.finish_reason, FinishReason::kContentFilter);
}

}  // namespace
}  // namespace kforge::llm
