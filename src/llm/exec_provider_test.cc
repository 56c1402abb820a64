// exec: provider with small shell scripts written by the tests.
#include "llm/exec_provider.h"

#include <gtest/gtest.h>

#include "llm/errors.h"
#include "llm/test_support.h"

namespace kforge::llm {
namespace {

using namespace std::chrono_literals;
using testing::TempDir;

ExecProviderOptions options_for(const std::string& command) {
  ExecProviderOptions o;
  o.command = command;
  o.timeout = 5s;
  o.retry = testing::fast_retry();
  o.default_max_tokens = 64;
  return o;
}

Request ask(std::string text) {
  Request r;
  r.messages.push_back(Message::text(Role::kUser, std::move(text)));
  return r;
}

TEST(ExecProvider, JsonOnStdinAndJsonReplyOnStdout) {
  TempDir dir;
  // Saves its stdin and answers with a JSON reply.
  testing::write_file(dir / "model.sh",
                      "#!/bin/sh\ncat > \"$(dirname \"$0\")/stdin.json\"\n"
                      "printf '{\"text\": \"from exec\", \"finish_reason\": \"length\", "
                      "\"usage\": {\"input_tokens\": 3, \"output_tokens\": 4}, \"model\": \"script-1\"}'\n",
                      0700);
  ExecProvider provider(options_for((dir / "model.sh").string()));
  Response r = provider.complete(ask("compute"));
  EXPECT_EQ(r.text, "from exec");
  EXPECT_EQ(r.finish_reason, FinishReason::kLength);
  EXPECT_EQ(r.usage.input_tokens, 3);
  EXPECT_EQ(r.usage.output_tokens, 4);
  EXPECT_EQ(r.model, "script-1");
  EXPECT_EQ(r.provider, "exec:" + (dir / "model.sh").string());

  auto stdin_json = nlohmann::json::parse(testing::read_file(dir / "stdin.json"));
  Request back = request_from_json(stdin_json);
  ASSERT_EQ(back.messages.size(), 1u);
  EXPECT_EQ(back.messages[0].joined_text(), "compute");
  EXPECT_EQ(back.max_tokens, 64);
}

TEST(ExecProvider, PlainTextReplyAndPromptFile) {
  ExecProvider provider(options_for("tr a-z A-Z < \"$KFORGE_PROMPT_FILE\""));
  Response r = provider.complete(ask("make me loud"));
  EXPECT_NE(r.text.find("## USER"), std::string::npos) << r.text;
  EXPECT_NE(r.text.find("MAKE ME LOUD"), std::string::npos) << r.text;
  EXPECT_EQ(r.finish_reason, FinishReason::kStop);
}

TEST(ExecProvider, FailureShowsStatusAndStderr) {
  ExecProvider provider(options_for("echo 'model not installed' >&2; exit 3"));
  try {
    provider.complete(ask("x"));
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCommandFailed);
    EXPECT_NE(std::string(e.what()).find("status 3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("model not installed"), std::string::npos) << e.what();
  }
}

TEST(ExecProvider, ErrorObjectOnStdout) {
  ExecProvider provider(options_for("echo '{\"error\": \"quota gone\"}'"));
  try {
    provider.complete(ask("x"));
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_NE(std::string(e.what()).find("quota gone"), std::string::npos) << e.what();
  }
}

TEST(ExecProvider, TempFailExitIsRetried) {
  TempDir dir;
  const std::string marker = (dir / "tried").string();
  ExecProvider provider(options_for("if [ -e '" + marker + "' ]; then echo second; else touch '" + marker +
                                    "'; exit 75; fi"));
  Response r = provider.complete(ask("x"));
  EXPECT_EQ(r.text, "second\n");
  EXPECT_EQ(r.attempts, 2);
}

TEST(ExecProvider, TimeoutKillsTheCommand) {
  auto o = options_for("sleep 30");
  o.timeout = 300ms;
  o.retry.max_attempts = 1;
  ExecProvider provider(o);
  auto start = std::chrono::steady_clock::now();
  try {
    provider.complete(ask("x"));
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kTimeout);
  }
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

TEST(ExecProvider, CancelStopsTheCommand) {
  CancelFlag cancel{false};
  auto o = options_for("sleep 30");
  o.cancel = &cancel;
  ExecProvider provider(o);
  std::thread stopper([&] {
    std::this_thread::sleep_for(150ms);
    cancel = true;
  });
  auto start = std::chrono::steady_clock::now();
  try {
    provider.complete(ask("x"));
    FAIL();
  } catch (const LlmError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kCancelled);
  }
  stopper.join();
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 3.0);
}

}  // namespace
}  // namespace kforge::llm
