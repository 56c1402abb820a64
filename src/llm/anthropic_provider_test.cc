// Anthropic Messages client against an in-process fake server.
#include "llm/anthropic_provider.h"

#include <gtest/gtest.h>

#include "llm/errors.h"
#include "llm/test_support.h"

namespace kforge::llm {
namespace {

using nlohmann::json;
using testing::FakeServer;

Request conversation() {
  Request r;
  r.messages.push_back(Message::text(Role::kSystem, "Rule one."));
  r.messages.push_back(Message::text(Role::kSystem, "Rule two."));
  r.messages.push_back(Message::text(Role::kUser, "Hello"));
  r.messages.push_back(Message::text(Role::kAssistant, "Hi"));
  Message image = Message::text(Role::kUser, "And this?");
  image.content.push_back(ContentPart::image_part("image/jpeg", "/9j/4AAQ"));
  r.messages.push_back(image);
  return r;
}

TEST(AnthropicProvider, SendsMessagesRequestWithRequiredHeaders) {
  json seen;
  std::string key, version, content_type;
  FakeServer server([&](httplib::Server& s, FakeServer&) {
    s.Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
      seen = json::parse(req.body);
      key = req.get_header_value("x-api-key");
      version = req.get_header_value("anthropic-version");
      content_type = req.get_header_value("Content-Type");
      res.set_content(testing::anthropic_reply("hello back"), "application/json");
    });
  });
  AnthropicProvider provider(testing::fast_http_options(server.base_url()));
  Response r = provider.complete(conversation());

  EXPECT_EQ(key, "test-key-123456");
  EXPECT_EQ(version, "2023-06-01");
  EXPECT_EQ(content_type, "application/json");
  EXPECT_EQ(seen["model"], "test-model");
  EXPECT_EQ(seen["max_tokens"], 128);
  EXPECT_EQ(seen["system"], "Rule one.\n\nRule two.");
  ASSERT_EQ(seen["messages"].size(), 3u);
  EXPECT_EQ(seen["messages"][0]["role"], "user");
  EXPECT_EQ(seen["messages"][0]["content"], "Hello");
  EXPECT_EQ(seen["messages"][1]["role"], "assistant");
  const json& parts = seen["messages"][2]["content"];
  EXPECT_EQ(parts[0]["type"], "text");
  EXPECT_EQ(parts[1]["type"], "image");
  EXPECT_EQ(parts[1]["source"]["type"], "base64");
  EXPECT_EQ(parts[1]["source"]["media_type"], "image/jpeg");
  EXPECT_EQ(parts[1]["source"]["data"], "/9j/4AAQ");

  EXPECT_EQ(r.text, "hello back");
  EXPECT_EQ(r.usage.input_tokens, 13);
  EXPECT_EQ(r.usage.output_tokens, 5);
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
  EXPECT_EQ(r.raw_finish_reason, "end_turn");
  EXPECT_EQ(r.model, "claude-test");
  EXPECT_EQ(r.provider, "anthropic:test-model");
}

TEST(AnthropicProvider, Streaming) {
  FakeServer server([&](httplib::Server& s, FakeServer&) {
    s.Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
      EXPECT_EQ(json::parse(req.body)["stream"], true);
      res.set_content(
          "event: message_start\n"
          "data: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"model\":\"claude-s\",\"content\":[],"
          "\"usage\":{\"input_tokens\":21,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n"
          "event: content_block_start\n"
          "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n"
          "event: ping\ndata: {\"type\":\"ping\"}\n\n"
          "event: content_block_delta\n"
          "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Ker\"}}\n\n"
          "event: content_block_delta\n"
          "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"nel\"}}\n\n"
          "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
          "event: message_delta\n"
          "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":9}}\n\n"
          "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
          "text/event-stream");
    });
  });
  auto options = testing::fast_http_options(server.base_url());
  options.stream = true;
  AnthropicProvider provider(options);
  Response r = provider.complete(conversation());
  EXPECT_EQ(r.text, "Kernel");
  EXPECT_EQ(r.usage.input_tokens, 25);
  EXPECT_EQ(r.usage.output_tokens, 9);
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.model, "claude-s");
}

TEST(AnthropicProvider, OverloadedErrorEventIsRetried) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
      if (++self.hits == 1) {
        res.set_content(
            "event: message_start\n"
            "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n"
            "event: error\n"
            "data: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "text/event-stream");
        return;
      }
      res.set_content(
          "event: message_start\n"
          "data: {\"type\":\"message_start\",\"message\":{\"model\":\"c\",\"usage\":{\"input_tokens\":1}}}\n\n"
          "event: content_block_delta\n"
          "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n"
          "event: message_delta\n"
          "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"
          "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
          "text/event-stream");
    });
  });
  auto options = testing::fast_http_options(server.base_url());
  options.stream = true;
  AnthropicProvider provider(options);
  Response r = provider.complete(conversation());
  EXPECT_EQ(r.text, "ok");
  EXPECT_EQ(r.attempts, 2);
}

TEST(AnthropicProvider, Status529ThenSuccess) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
      if (++self.hits < 3) {
        res.status = 529;
        res.set_content(R"({"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}})",
                        "application/json");
        return;
      }
      res.set_content(testing::anthropic_reply("finally"), "application/json");
    });
  });
  AnthropicProvider provider(testing::fast_http_options(server.base_url()));
  Response r = provider.complete(conversation());
  EXPECT_EQ(r.text, "finally");
  EXPECT_EQ(r.attempts, 3);
}

TEST(AnthropicProvider, UnauthorizedNamesTheVariable) {
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/messages", [&](const httplib::Request&, httplib::Response& res) {
      ++self.hits;
      res.status = 401;
      res.set_content(R"({"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}})",
                      "application/json");
    });
  });
  AnthropicProvider provider(testing::fast_http_options(server.base_url()));
  try {
    provider.complete(conversation());
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kAuth);
    EXPECT_NE(std::string(e.what()).find("ANTHROPIC_API_KEY"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("invalid x-api-key"), std::string::npos) << e.what();
  }
  EXPECT_EQ(server.hits, 1);
}

TEST(AnthropicProvider, TruncatedStreamIsMalformed) {
  EXPECT_THROW(parse_anthropic_stream("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n"),
               LlmError);
  EXPECT_THROW(parse_anthropic_message("{\"content\": [ {\"type\": \"te"), LlmError);
}

}  // namespace
}  // namespace kforge::llm
