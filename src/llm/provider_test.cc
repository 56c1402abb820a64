// Canonical JSON forms of requests and responses.
#include "llm/provider.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "llm/reply_format.h"
#include "util/errors.h"

namespace kforge::llm {
namespace {

TEST(ProviderTypes, RequestJsonRoundTrip) {
  Request r;
  r.messages.push_back(Message::text(Role::kSystem, "sys"));
  Message m = Message::text(Role::kUser, "look");
  m.content.push_back(ContentPart::image_part("image/png", "AAAA"));
  r.messages.push_back(m);
  r.max_tokens = 77;
  r.temperature = 0.5;
  nlohmann::json j = request_to_json(r);
  EXPECT_EQ(j["messages"][1]["content"][1]["type"], "image");
  Request back = request_from_json(j);
  EXPECT_EQ(request_to_json(back), j);
  // A plain string content is accepted too.
  Request simple = request_from_json(nlohmann::json::parse(R"({"messages":[{"role":"user","content":"hi"}]})"));
  EXPECT_EQ(simple.messages[0].joined_text(), "hi");
  EXPECT_THROW(request_from_json(nlohmann::json::parse(R"({"messages":[{"role":"robot","content":"x"}]})")),
               InputError);
}

TEST(ProviderTypes, ResponseJsonRoundTrip) {
  Response r;
  r.text = "t";
  r.usage = {3, 4};
  r.finish_reason = FinishReason::kLength;
  r.raw_finish_reason = "max_tokens";
  r.latency = std::chrono::milliseconds(12);
  r.model = "m";
  r.provider = "anthropic:m";
  r.attempts = 2;
  Response back = response_from_json(response_to_json(r));
  EXPECT_EQ(response_to_json(back), response_to_json(r));
}

TEST(ReplyFormat, JsonOrPlainText) {
  EXPECT_EQ(parse_reply("just text\n", "x").text, "just text\n");
  EXPECT_EQ(parse_reply("{\"text\": \"j\"}", "x").text, "j");
  EXPECT_EQ(parse_reply("{\"other\": 1}", "x").text, "{\"other\": 1}");  // not the reply form: verbatim
  EXPECT_THROW(parse_reply_json("nope", "x"), std::exception);
}

}  // namespace
}  // namespace kforge::llm
