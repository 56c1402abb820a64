// Secret names, redaction, the config-file mode check, and a canary key that must not
// reach logs, transcripts or error messages on any path.
#include "llm/secrets.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <sstream>

#include "llm/errors.h"
#include "llm/provider_factory.h"
#include "llm/settings.h"
#include "llm/test_support.h"
#include "util/errors.h"

namespace kforge::llm {
namespace {

using testing::FakeServer;
using testing::ScopedEnv;
using testing::TempDir;

TEST(Secrets, NamesConsideredSecret) {
  for (const char* name : {"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_SERVICE_API_KEY", "HF_TOKEN", "GITHUB_TOKEN",
                           "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "client_secret", "GOOGLE_APPLICATION_CREDENTIALS"})
    EXPECT_TRUE(is_secret_env_name(name)) << name;
  for (const char* name : {"PATH", "HOME", "CUDA_VISIBLE_DEVICES", "OPENAI_BASE_URL", "KFORGE_CONFIG", "MAX_TOKENS"})
    EXPECT_FALSE(is_secret_env_name(name)) << name;
}

TEST(Secrets, SecretEnvVarNamesListsKnownAndPresentOnes) {
  ScopedEnv env("KFORGE_TEST_SERVICE_TOKEN", "abcdefgh12345");
  auto names = secret_env_var_names();
  auto has = [&](std::string_view n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("OPENAI_API_KEY"));
  EXPECT_TRUE(has("ANTHROPIC_API_KEY"));
  EXPECT_TRUE(has("KFORGE_TEST_SERVICE_TOKEN"));
  EXPECT_FALSE(has("PATH"));
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
}

TEST(Secrets, RedactsRegisteredAndEnvironmentValues) {
  register_secret("registered-secret-value");
  register_secret("abc");  // too short to register
  ScopedEnv env("KFORGE_TEST_API_KEY", "env-secret-value-42");
  std::string text = "a registered-secret-value b env-secret-value-42 c abc";
  EXPECT_EQ(redact_secrets(text), "a [REDACTED] b [REDACTED] c abc");
}

TEST(Secrets, ConfigHoldingAKeyMustBePrivate) {
  TempDir dir;
  const std::string canary = "sk-ant-canary-config-5e1f0c2a";
  testing::write_file(dir / "kforge.toml", "[llm.api_keys]\nanthropic = \"" + canary + "\"\n", 0644);
  Config config;
  config.path = dir / "kforge.toml";
  config.table = toml::parse_file(config.path.string());
  try {
    load_llm_settings(config);
    FAIL() << "a world-readable key file must be refused";
  } catch (const InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("chmod 600"), std::string::npos) << what;
    EXPECT_EQ(what.find(canary), std::string::npos) << what;
  }
  ::chmod(config.path.c_str(), 0600);
  LlmSettings settings = load_llm_settings(config);
  EXPECT_EQ(settings.api_keys.at("anthropic"), canary);

  // Without a secret the mode does not matter.
  testing::write_file(dir / "plain.toml", "[llm]\nprovider = \"openai:gpt-4o\"\nmax_tokens = 100\n", 0644);
  Config plain;
  plain.path = dir / "plain.toml";
  plain.table = toml::parse_file(plain.path.string());
  EXPECT_NO_THROW(load_llm_settings(plain));
}

// Canary keys in the environment and in the config file; a server that echoes them back
// in error bodies and replies; a command that prints them on stderr. None may surface.
TEST(Secrets, CanaryKeysNeverLeak) {
  const std::string env_canary = "sk-canary-env-7d3a9b1c4e5f";
  const std::string cfg_canary = "sk-ant-canary-cfg-0b8e2d6f1a";
  ScopedEnv openai_key("OPENAI_API_KEY", env_canary);
  ScopedEnv anthropic_key("ANTHROPIC_API_KEY", std::nullopt);
  TempDir dir;
  testing::write_file(dir / "kforge.toml",
                      "[llm]\nmax_tokens = 64\n[llm.retry]\nmax_attempts = 2\nbase_delay_s = 0.01\n"
                      "[llm.timeouts]\nread_s = 2\n[llm.api_keys]\nanthropic = \"" + cfg_canary + "\"\n",
                      0600);
  Config config;
  config.path = dir / "kforge.toml";
  config.table = toml::parse_file(config.path.string());

  std::ostringstream log;
  auto logger = std::make_shared<spdlog::logger>("canary", std::make_shared<spdlog::sinks::ostream_sink_mt>(log));
  logger->set_level(spdlog::level::trace);
  auto previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);

  std::string errors;
  FakeServer server([&](httplib::Server& s, FakeServer& self) {
    auto echo = [&](const httplib::Request& req, httplib::Response& res) {
      std::string presented = req.get_header_value("Authorization") + req.get_header_value("x-api-key");
      if (req.body.find("fail") != std::string::npos) {
        res.status = (++self.hits % 2) ? 500 : 401;
        res.set_content("{\"error\":{\"message\":\"bad key " + presented + "\"}}", "application/json");
      } else if (req.path == "/v1/messages") {
        res.set_content(testing::anthropic_reply("your key is " + presented), "application/json");
      } else {
        res.set_content(testing::openai_reply("your key is " + presented), "application/json");
      }
    };
    s.Post("/v1/chat/completions", echo);
    s.Post("/v1/messages", echo);
  });

  Request ok, fail;
  ok.messages.push_back(Message::text(Role::kUser, "hello"));
  fail.messages.push_back(Message::text(Role::kUser, "please fail"));
  for (std::string spec : {"openai:m", "anthropic:m"}) {
    ProviderOptions options;
    options.spec = spec;
    options.base_url = server.base_url(spec == "openai:m" ? "/v1" : "");
    options.record_path = dir / (spec.substr(0, spec.find(':')) + ".jsonl");
    auto provider = make_provider(options, config);
    Response r = provider->complete(ok);
    EXPECT_NE(r.text.find("your key is"), std::string::npos);  // the server did see a key
    try {
      provider->complete(fail);
      ADD_FAILURE() << "expected an error";
    } catch (const LlmError& e) {
      errors += e.what();
      errors += "\n";
    }
  }
  {
    ProviderOptions options;
    options.spec = "exec:echo \"key $OPENAI_API_KEY\" >&2; exit 1";
    auto provider = make_provider(options, config);
    try {
      provider->complete(ok);
      ADD_FAILURE() << "expected an error";
    } catch (const LlmError& e) {
      errors += e.what();
    }
  }
  spdlog::set_default_logger(previous);

  const std::string transcripts =
      testing::read_file(dir / "openai.jsonl") + testing::read_file(dir / "anthropic.jsonl");
  for (const std::string& canary : {env_canary, cfg_canary}) {
    EXPECT_EQ(errors.find(canary), std::string::npos) << errors;
    EXPECT_EQ(log.str().find(canary), std::string::npos) << log.str();
    EXPECT_EQ(transcripts.find(canary), std::string::npos) << transcripts;
  }
  EXPECT_NE(errors.find("[REDACTED]"), std::string::npos) << errors;
  EXPECT_NE(transcripts.find("[REDACTED]"), std::string::npos) << transcripts;
  EXPECT_NE(log.str().find("retrying"), std::string::npos) << log.str();  // the 500 was logged, redacted
}

}  // namespace
}  // namespace kforge::llm
