// --record then replay: round trips, key matching, position mode and mismatch messages.
#include "llm/replay_provider.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "llm/errors.h"
#include "llm/normalize.h"
#include "llm/provider_factory.h"
#include "llm/recording_provider.h"
#include "llm/test_support.h"
#include "util/errors.h"

namespace kforge::llm {
namespace {

using testing::FakeServer;
using testing::TempDir;

Request ask(std::string text) {
  Request r;
  r.messages.push_back(Message::text(Role::kSystem, "You are a kernel engineer."));
  r.messages.push_back(Message::text(Role::kUser, std::move(text)));
  return r;
}

TEST(Replay, RecordThenReplayRoundTripIsIdentical) {
  TempDir dir;
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    s.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
      auto body = nlohmann::json::parse(req.body);
      std::string prompt = body["messages"][1]["content"];
      res.set_content(testing::openai_reply("answer " + std::to_string(++self.hits) + " to " + prompt), "application/json");
    });
  });
  LlmSettings settings = testing::fast_settings();
  const std::vector<std::string> prompts = {
      "Kernel took 1.234 ms in /tmp/kforge-run-abc123/cand.cu", "Speed it up", "Kernel took 1.234 ms in /tmp/kforge-run-abc123/cand.cu"};

  ProviderOptions record;
  record.spec = "openai:test-model";
  record.base_url = server.base_url("/v1");
  record.record_path = dir / "first.jsonl";
  std::vector<Response> live;
  {
    auto provider = make_provider(record, settings);
    for (const auto& p : prompts) live.push_back(provider->complete(ask(p)));
  }
  EXPECT_EQ(server.hits, 3);

  // Replay by key while recording again: the same replies, in the same order.
  ProviderOptions replay;
  replay.spec = "replay:" + (dir / "first.jsonl").string();
  replay.record_path = dir / "second.jsonl";
  {
    auto provider = make_provider(replay, settings);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      // Volatile parts differ from the recording but are masked.
      std::string p = prompts[i];
      if (auto pos = p.find("1.234"); pos != std::string::npos) p.replace(pos, 5, "9.87");
      if (auto pos = p.find("abc123"); pos != std::string::npos) p.replace(pos, 6, "zz9");
      Response r = provider->complete(ask(p));
      EXPECT_EQ(r.text, live[i].text);
      EXPECT_EQ(r.usage.input_tokens, live[i].usage.input_tokens);
      EXPECT_EQ(r.usage.output_tokens, live[i].usage.output_tokens);
      EXPECT_EQ(r.finish_reason, live[i].finish_reason);
      EXPECT_EQ(r.provider, "openai:test-model");
    }
  }
  EXPECT_EQ(server.hits, 3);  // nothing reached the server
  std::string first = testing::read_file(dir / "first.jsonl");
  std::string second = testing::read_file(dir / "second.jsonl");
  EXPECT_EQ(std::count(first.begin(), first.end(), '\n'), 3);
  // Same replies in the same order; requests differ only in masked parts, so compare keys.
  auto a = read_transcript(dir / "first.jsonl"), b = read_transcript(dir / "second.jsonl");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].key, b[i].key);
    EXPECT_EQ(response_to_json(a[i].response), response_to_json(b[i].response));
  }

  // Replaying the exact requests reproduces the transcript byte for byte.
  ProviderOptions exact;
  exact.spec = "replay:" + (dir / "first.jsonl").string();
  exact.record_path = dir / "third.jsonl";
  {
    auto provider = make_provider(exact, settings);
    for (const auto& p : prompts) provider->complete(ask(p));
  }
  EXPECT_EQ(testing::read_file(dir / "third.jsonl"), first);
}

TEST(Replay, MismatchStopsWithTheDifference) {
  TempDir dir;
  {
    std::ofstream out(dir / "t.jsonl");
    TranscriptEntry e;
    e.request = ask("Optimise the softmax kernel.\nUse shared memory.");
    e.key = request_key(e.request);
    e.response.text = "ok";
    e.response.provider = "openai:m";
    out << encode_transcript_entry(e) << "\n";
  }
  ReplayProvider provider(dir / "t.jsonl", false);
  try {
    provider.complete(ask("Optimise the softmax kernel.\nUse tensor cores."));
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kReplayMismatch);
    std::string what = e.what();
    EXPECT_NE(what.find("recorded: Use shared memory."), std::string::npos) << what;
    EXPECT_NE(what.find("actual:   Use tensor cores."), std::string::npos) << what;
    EXPECT_NE(what.find("--replay-by-position"), std::string::npos) << what;
  }
  // The unmatched entry is still there for a matching request.
  EXPECT_EQ(provider.complete(ask("Optimise the softmax kernel.\nUse shared memory.")).text, "ok");
  EXPECT_EQ(provider.remaining(), 0u);
}

TEST(Replay, ByPositionIgnoresContentAndStopsAtTheEnd) {
  TempDir dir;
  {
    std::ofstream out(dir / "t.jsonl");
    for (int i = 0; i < 2; ++i) {
      TranscriptEntry e;
      e.seq = i;
      e.request = ask("question " + std::to_string(i));
      e.key = request_key(e.request);
      e.response.text = "reply " + std::to_string(i);
      out << encode_transcript_entry(e) << "\n";
    }
  }
  ReplayProvider provider(dir / "t.jsonl", true);
  EXPECT_EQ(provider.complete(ask("something else")).text, "reply 0");
  EXPECT_EQ(provider.complete(ask("question 1")).text, "reply 1");
  try {
    provider.complete(ask("question 2"));
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kReplayMismatch);
    EXPECT_NE(std::string(e.what()).find("holds 2 entries"), std::string::npos) << e.what();
  }
}

// A prompt as the loop builds it: the text sent, and the text with what the machine measured
// left out (what a replay matches on).
Request measured_prompt(const std::string& problem, const std::string& top_operator, const std::string& heading) {
  Request r;
  r.messages.push_back(Message::text(Role::kSystem, "You are a performance analyst."));
  Message user = Message::text(Role::kUser, "Problem: " + problem + "\n" + heading + "\nlimiter 2: " + top_operator +
                                                " takes 61% of the call\n");
  user.match_text = "Problem: " + problem + "\n" + heading + "\n<measured>\n";
  r.messages.push_back(user);
  return r;
}

// Captures what the replay logs while it lives.
struct CapturedLog {
  std::ostringstream text;
  std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  CapturedLog() {
    auto logger = std::make_shared<spdlog::logger>("replay", std::make_shared<spdlog::sinks::ostream_sink_mt>(text));
    spdlog::set_default_logger(logger);
  }
  ~CapturedLog() { spdlog::set_default_logger(previous); }
  std::string take() {
    std::string out = text.str();
    text.str("");
    return out;
  }
};

TEST(Replay, MeasuredContentNeitherWarnsNorMismatchesButATemplateOrProblemChangeDoes) {
  TempDir dir;
  {
    std::ofstream out(dir / "t.jsonl");
    for (int i = 0; i < 3; ++i) {
      TranscriptEntry e;
      e.seq = i;
      e.request = measured_prompt("x * sigmoid(x), 64 x 32768", "aten::sigmoid", "## Profile of the best");
      e.key = request_key(e.request);
      e.response.text = "advice " + std::to_string(i);
      out << encode_transcript_entry(e) << "\n";
    }
  }
  // The match text survives the transcript, and a model never sees it.
  auto entries = read_transcript(dir / "t.jsonl");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0].request.messages[1].match_text,
            "Problem: x * sigmoid(x), 64 x 32768\n## Profile of the best\n<measured>\n");
  EXPECT_TRUE(as_sent(entries[0].request).messages[1].match_text.empty());
  EXPECT_EQ(as_sent(entries[0].request).messages[1].joined_text(), entries[0].request.messages[1].joined_text());

  // Another machine's profile puts another operator on top: same key, so a replay by key matches it.
  const Request elsewhere = measured_prompt("x * sigmoid(x), 64 x 32768", "aten::mul", "## Profile of the best");
  EXPECT_EQ(request_key(elsewhere), entries[0].key);
  EXPECT_EQ(ReplayProvider(dir / "t.jsonl", false).complete(elsewhere).text, "advice 0");

  CapturedLog log;
  ReplayProvider provider(dir / "t.jsonl", true);
  EXPECT_EQ(provider.complete(elsewhere).text, "advice 0");
  EXPECT_EQ(log.take().find("differs from transcript"), std::string::npos);
  // A changed template is a real difference: warned, with the line that changed.
  EXPECT_EQ(provider.complete(measured_prompt("x * sigmoid(x), 64 x 32768", "aten::mul", "## Profile")).text,
            "advice 1");
  std::string warned = log.take();
  EXPECT_NE(warned.find("request 2 differs from transcript entry 1"), std::string::npos) << warned;
  EXPECT_NE(warned.find("recorded: ## Profile of the best"), std::string::npos) << warned;
  // So is another problem.
  EXPECT_EQ(provider.complete(measured_prompt("x * sigmoid(x), 64 x 4096", "aten::mul", "## Profile of the best")).text,
            "advice 2");
  warned = log.take();
  EXPECT_NE(warned.find("request 3 differs from transcript entry 2"), std::string::npos) << warned;
  EXPECT_NE(warned.find("actual:   Problem: x * sigmoid(x), 64 x 4096"), std::string::npos) << warned;
}

TEST(Replay, DuplicateRequestsAreServedInOrder) {
  TempDir dir;
  {
    std::ofstream out(dir / "t.jsonl");
    for (int i = 0; i < 2; ++i) {
      TranscriptEntry e;
      e.request = ask("same");
      e.key = request_key(e.request);
      e.response.text = "reply " + std::to_string(i);
      out << encode_transcript_entry(e) << "\n";
    }
  }
  ReplayProvider provider(dir / "t.jsonl", false);
  EXPECT_EQ(provider.complete(ask("same")).text, "reply 0");
  EXPECT_EQ(provider.complete(ask("same")).text, "reply 1");
}

// A resumed run answers its finished calls from its store: the replay must then go on with the
// entry after them, not start the transcript over (by position), nor serve a stored call's entry
// again to a later request with the same key (by key).
TEST(Replay, CallsAnsweredFromTheStoreConsumeTheirEntries) {
  TempDir dir;
  {
    std::ofstream out(dir / "t.jsonl");
    for (int i = 0; i < 3; ++i) {
      TranscriptEntry e;
      e.seq = i;
      e.request = ask(i == 2 ? "question 0" : "question " + std::to_string(i));
      e.key = request_key(e.request);
      e.response.text = "reply " + std::to_string(i);
      out << encode_transcript_entry(e) << "\n";
    }
  }
  ReplayProvider by_position(dir / "t.jsonl", true);
  by_position.answered_from_store(ask("question 0"), Response{});
  by_position.answered_from_store(ask("question 1"), Response{});
  EXPECT_EQ(by_position.complete(ask("question 0")).text, "reply 2");
  EXPECT_EQ(by_position.remaining(), 0u);

  ReplayProvider by_key(dir / "t.jsonl", false);
  by_key.answered_from_store(ask("question 0"), Response{});
  EXPECT_EQ(by_key.complete(ask("question 0")).text, "reply 2");
  EXPECT_EQ(by_key.complete(ask("question 1")).text, "reply 1");
}

// A recording of a resumed run holds the calls taken from the store too, in order.
TEST(Replay, RecordingWritesCallsAnsweredFromTheStore) {
  TempDir dir;
  {
    std::ofstream out(dir / "t.jsonl");
    TranscriptEntry e;
    e.request = ask("question 1");
    e.key = request_key(e.request);
    e.response.text = "reply 1";
    out << encode_transcript_entry(e) << "\n";
  }
  {
    RecordingProvider recording(std::make_unique<ReplayProvider>(dir / "t.jsonl", false), dir / "rec.jsonl");
    Response stored;
    stored.text = "reply 0";
    recording.answered_from_store(ask("question 0"), stored);
    EXPECT_EQ(recording.complete(ask("question 1")).text, "reply 1");
  }
  auto entries = read_transcript(dir / "rec.jsonl");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].response.text, "reply 0");
  EXPECT_EQ(entries[1].response.text, "reply 1");
}

TEST(Replay, MalformedTranscriptNamesTheLine) {
  TempDir dir;
  testing::write_file(dir / "t.jsonl", "{\"v\":1,\"request\":{\"messages\":[]},\"response\":{\"text\":\"a\"}}\n{\"v\":1,");
  try {
    ReplayProvider provider(dir / "t.jsonl", false);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.jsonl:2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(ReplayProvider(dir / "missing.jsonl", false), InputError);
}

}  // namespace
}  // namespace kforge::llm
