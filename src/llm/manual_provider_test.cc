// manual: provider, answered by a thread that writes the reply file and renames it.
#include "llm/manual_provider.h"

#include <gtest/gtest.h>

#include "llm/errors.h"
#include "llm/test_support.h"

namespace kforge::llm {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
using testing::TempDir;

ManualProviderOptions options_for(const fs::path& dir, std::string* notes) {
  ManualProviderOptions o;
  o.dir = dir;
  o.poll_interval = 10ms;
  o.notify = [notes](const std::string& text) { *notes += text; };
  return o;
}

// Waits for `request` to appear, then writes `reply` under a temporary name and renames it.
std::thread answer(const fs::path& dir, std::string request, std::string reply_name, std::string reply) {
  return std::thread([=] {
    for (int i = 0; i < 500 && !fs::exists(dir / request); ++i) std::this_thread::sleep_for(5ms);
    testing::write_file(dir / (reply_name + ".partial"), reply);
    fs::rename(dir / (reply_name + ".partial"), dir / reply_name);
  });
}

TEST(ManualProvider, WritesRequestAndWaitsForRenamedReply) {
  TempDir dir;
  std::string notes;
  ManualProvider provider(options_for(dir.path(), &notes));
  Request r;
  r.messages.push_back(Message::text(Role::kSystem, "Be brief."));
  Message user = Message::text(Role::kUser, "Write a kernel.");
  user.content.push_back(ContentPart::image_part("image/png", "aGVsbG8="));  // "hello"
  r.messages.push_back(user);

  std::thread replier = answer(dir.path(), "request-0001.md", "reply-0001.md", "__global__ void k() {}\n");
  Response resp = provider.complete(r);
  replier.join();

  EXPECT_EQ(resp.text, "__global__ void k() {}\n");
  EXPECT_EQ(resp.finish_reason, FinishReason::kStop);
  EXPECT_EQ(resp.provider, "manual:" + dir.path().string());

  const std::string md = testing::read_file(dir / "request-0001.md");
  EXPECT_NE(md.find("## system\n\nBe brief."), std::string::npos) << md;
  EXPECT_NE(md.find("## user\n\nWrite a kernel."), std::string::npos) << md;
  EXPECT_NE(md.find("![image 1](request-0001-image-1.png)"), std::string::npos) << md;
  EXPECT_EQ(testing::read_file(dir / "request-0001-image-1.png"), "hello");
  auto json = nlohmann::json::parse(testing::read_file(dir / "request-0001.json"));
  EXPECT_EQ(request_from_json(json).messages.size(), 2u);

  EXPECT_NE(notes.find((dir / "request-0001.md").string()), std::string::npos) << notes;
  EXPECT_NE(notes.find((dir / "reply-0001.md").string()), std::string::npos) << notes;
  EXPECT_NE(notes.find("rename"), std::string::npos) << notes;
}

TEST(ManualProvider, JsonReplyAndNumberingContinues) {
  TempDir dir;
  std::string notes;
  testing::write_file(dir / "request-0004.json", "{}");  // left by an earlier run
  ManualProvider provider(options_for(dir.path(), &notes));
  Request r;
  r.messages.push_back(Message::text(Role::kUser, "hi"));
  std::thread replier = answer(dir.path(), "request-0005.md", "reply-0005.json",
                               R"({"text": "json reply", "usage": {"input_tokens": 2, "output_tokens": 3}})");
  Response resp = provider.complete(r);
  replier.join();
  EXPECT_EQ(resp.text, "json reply");
  EXPECT_EQ(resp.usage.output_tokens, 3);
}

TEST(ManualProvider, TimeoutAndCancel) {
  TempDir dir;
  std::string notes;
  auto o = options_for(dir.path(), &notes);
  o.timeout = 100ms;
  ManualProvider timed(o);
  Request r;
  r.messages.push_back(Message::text(Role::kUser, "hi"));
  try {
    timed.complete(r);
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout);
  }

  CancelFlag cancel{true};
  o.timeout = 0ms;
  o.cancel = &cancel;
  ManualProvider cancelled(o);
  try {
    cancelled.complete(r);
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
}

// A run stopped at a missing reply and resumed asks the same request again: the reply written
// for the first asking answers it, and no second request file appears. Once taken, an identical
// request is a new one.
TEST(ManualProvider, IdenticalUntakenRequestIsNotAskedAgain) {
  TempDir dir;
  std::string notes;
  auto o = options_for(dir.path(), &notes);
  o.timeout = 50ms;
  Request r;
  r.messages.push_back(Message::text(Role::kUser, "Write a kernel."));
  {
    ManualProvider stopped(o);
    EXPECT_THROW(stopped.complete(r), LlmError);
  }
  testing::write_file(dir / "reply-0001.md", "first answer");

  ManualProvider resumed(o);
  EXPECT_EQ(resumed.complete(r).text, "first answer");
  EXPECT_FALSE(fs::exists(dir / "request-0002.json"));
  EXPECT_NE(notes.find("request 1, asked before"), std::string::npos) << notes;

  ManualProvider again(o);  // the taken reply is remembered across processes
  EXPECT_THROW(again.complete(r), LlmError);
  EXPECT_TRUE(fs::exists(dir / "request-0002.json"));

  Request other;
  other.messages.push_back(Message::text(Role::kUser, "Another kernel."));
  EXPECT_THROW(again.complete(other), LlmError);
  EXPECT_TRUE(fs::exists(dir / "request-0003.json"));
}

}  // namespace
}  // namespace kforge::llm
