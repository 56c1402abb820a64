// Provider specs, base URL and key resolution, and decorators added by make_provider().
#include "llm/provider_factory.h"

#include <gtest/gtest.h>

#include "llm/test_support.h"
#include "util/errors.h"

namespace kforge::llm {
namespace {

using testing::FakeServer;
using testing::ScopedEnv;

TEST(ProviderSpec, SplitsAtTheFirstColon) {
  auto s = parse_provider_spec("openai:llama3:8b");
  EXPECT_EQ(s.kind, "openai");
  EXPECT_EQ(s.argument, "llama3:8b");
  s = parse_provider_spec("exec:python3 -c 'print(1)'");
  EXPECT_EQ(s.kind, "exec");
  EXPECT_EQ(s.argument, "python3 -c 'print(1)'");
  EXPECT_THROW(parse_provider_spec("gpt-4o"), InputError);
  EXPECT_THROW(parse_provider_spec("gemini:pro"), InputError);
  EXPECT_THROW(parse_provider_spec("anthropic:"), InputError);
}

TEST(ProviderFactory, UsesConfigProviderAndRequiresKeysForHostedApis) {
  ScopedEnv a("OPENAI_API_KEY", std::nullopt), b("ANTHROPIC_API_KEY", std::nullopt);
  ScopedEnv c("OPENAI_BASE_URL", std::nullopt), d("ANTHROPIC_BASE_URL", std::nullopt);
  LlmSettings settings = testing::fast_settings();
  EXPECT_THROW(make_provider(ProviderOptions{}, settings), InputError);  // no provider at all
  settings.provider = "anthropic:claude-x";
  try {
    make_provider(ProviderOptions{}, settings);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("ANTHROPIC_API_KEY"), std::string::npos);
  }
  settings.api_keys["anthropic"] = "from-config-key";
  EXPECT_EQ(make_provider(ProviderOptions{}, settings)->name(), "anthropic:claude-x");

  ProviderOptions options;
  options.spec = "openai:gpt-4o";
  EXPECT_THROW(make_provider(options, settings), InputError);
  options.base_url = "http://127.0.0.1:1/v1";  // local server: key optional
  EXPECT_EQ(make_provider(options, settings)->name(), "openai:gpt-4o");

  options.spec = "exec:cat";
  EXPECT_THROW(make_provider(options, settings), InputError);  // --llm-base-url makes no sense here
  options.base_url.clear();
  options.replay_by_position = true;
  EXPECT_THROW(make_provider(options, settings), InputError);
}

TEST(ProviderFactory, BaseUrlPrecedenceAndMetering) {
  ScopedEnv key("OPENAI_API_KEY", std::nullopt);
  FakeServer env_server([&](httplib::Server& s, FakeServer&) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(testing::openai_reply("from env server", 1000, 2000), "application/json");
    });
  });
  FakeServer flag_server([&](httplib::Server& s, FakeServer&) {
    s.Post("/v1/chat/completions", [&](const httplib::Request&, httplib::Response& res) {
      res.set_content(testing::openai_reply("from flag server"), "application/json");
    });
  });
  ScopedEnv url("OPENAI_BASE_URL", env_server.base_url("/v1"));
  LlmSettings settings = testing::fast_settings();
  settings.base_url = "http://127.0.0.1:1/v1";  // config loses against the environment
  settings.prices.set("openai:local", Price{2.0, 10.0});
  auto meter = std::make_shared<UsageMeter>();

  ProviderOptions options;
  options.spec = "openai:local";
  options.meter = meter;
  Request r;
  r.messages.push_back(Message::text(Role::kUser, "hi"));
  Response from_env = make_provider(options, settings)->complete(r);
  EXPECT_EQ(from_env.text, "from env server");
  ASSERT_TRUE(from_env.cost_usd);
  EXPECT_DOUBLE_EQ(*from_env.cost_usd, (1000 * 2.0 + 2000 * 10.0) / 1e6);

  options.base_url = flag_server.base_url("/v1");  // the flag wins over everything
  EXPECT_EQ(make_provider(options, settings)->complete(r).text, "from flag server");

  UsageTotals totals = meter->totals();
  EXPECT_EQ(totals.calls, 2);
  EXPECT_EQ(totals.usage.input_tokens, 1011);
  EXPECT_EQ(totals.usage.output_tokens, 2007);
  EXPECT_EQ(totals.unpriced_calls, 0);
  EXPECT_NE(format_totals(totals).find("2 calls"), std::string::npos);
}

}  // namespace
}  // namespace kforge::llm
