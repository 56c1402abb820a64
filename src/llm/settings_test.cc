// Parsing of the [llm] section of kforge.toml.
#include "llm/settings.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::llm {
namespace {

using namespace std::chrono_literals;

Config config_of(std::string_view text) {
  Config c;
  c.table = toml::parse(text);
  return c;
}

TEST(Settings, DefaultsWithoutAnLlmSection) {
  LlmSettings s = load_llm_settings(Config{});
  EXPECT_EQ(s.provider, "");
  EXPECT_EQ(s.max_tokens, 8192);
  EXPECT_FALSE(s.stream);
  EXPECT_EQ(s.timeouts.connect, 10s);
  EXPECT_EQ(s.retry.max_attempts, 5);
  EXPECT_TRUE(s.prices.empty());
}

TEST(Settings, ReadsEveryKey) {
  LlmSettings s = load_llm_settings(config_of(R"(
[llm]
provider = "openai:gpt-4o"
base_url = "http://127.0.0.1:8000/v1"
max_tokens = 4096
temperature = 0.2
stream = true

[llm.openai]
base_url = "http://127.0.0.1:9000/v1"
max_tokens_field = "max_tokens"

[llm.anthropic]
base_url = "http://127.0.0.1:9001"

[llm.timeouts]
connect_s = 5
read_s = 120.5
request_s = 600

[llm.retry]
max_attempts = 8
base_delay_s = 0.5
max_delay_s = 30
max_total_s = 1200

[llm.exec]
timeout_s = 60

[llm.manual]
poll_interval_s = 0.25
timeout_s = 3600

[llm.prices."openai:gpt-4o"]
input_per_mtok = 2.5
output_per_mtok = 10

[llm.prices."claude-sonnet-4-5"]
input_per_mtok = 3
output_per_mtok = 15
)"));
  EXPECT_EQ(s.provider, "openai:gpt-4o");
  EXPECT_EQ(s.base_url, "http://127.0.0.1:8000/v1");
  EXPECT_EQ(s.base_urls.at("openai"), "http://127.0.0.1:9000/v1");
  EXPECT_EQ(s.base_urls.at("anthropic"), "http://127.0.0.1:9001");
  EXPECT_EQ(s.openai_max_tokens_field, "max_tokens");
  EXPECT_EQ(s.max_tokens, 4096);
  EXPECT_DOUBLE_EQ(*s.temperature, 0.2);
  EXPECT_TRUE(s.stream);
  EXPECT_EQ(s.timeouts.connect, 5s);
  EXPECT_EQ(s.timeouts.read, 120500ms);
  EXPECT_EQ(s.timeouts.request, 600s);
  EXPECT_EQ(s.retry.max_attempts, 8);
  EXPECT_EQ(s.retry.base_delay, 500ms);
  EXPECT_EQ(s.retry.max_delay, 30s);
  EXPECT_EQ(s.retry.max_total, 1200s);
  EXPECT_EQ(s.exec_timeout, 60s);
  EXPECT_EQ(s.manual_poll, 250ms);
  EXPECT_EQ(s.manual_timeout, 3600s);
  ASSERT_TRUE(s.prices.find("openai:gpt-4o"));
  EXPECT_DOUBLE_EQ(s.prices.find("openai:gpt-4o")->output_per_mtok, 10.0);
  EXPECT_TRUE(s.prices.find("anthropic:claude-sonnet-4-5"));  // by model name alone
  EXPECT_FALSE(s.prices.find("openai:gpt-4o-mini"));
}

TEST(Settings, RejectsWrongTypesWithTheKeyName) {
  auto message = [](std::string_view text) {
    try {
      load_llm_settings(config_of(text));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("[llm]\nmax_tokens = \"many\"").find("[llm] max_tokens"), std::string::npos);
  EXPECT_NE(message("[llm]\nmax_tokens = 0").find("positive integer"), std::string::npos);
  EXPECT_NE(message("[llm.timeouts]\nread_s = -1").find("read_s"), std::string::npos);
  EXPECT_NE(message("[llm]\nstream = 1").find("true or false"), std::string::npos);
  EXPECT_NE(message("[llm.prices.\"openai:x\"]\ninput_per_mtok = 1").find("output_per_mtok"), std::string::npos);
  EXPECT_NE(message("[llm.openai]\nmax_tokens_field = \"tokens\"").find("max_tokens_field"), std::string::npos);
}

// config/config.h lists the keys kforge knows; each llm.* one must really be read here: a value
// of the wrong type for it has to stop the loader with the key's name.
TEST(Settings, ReadsEveryKnownLlmKey) {
  int checked = 0;
  for (const auto& key : known_keys()) {
    std::string dotted(key.dotted);
    if (!dotted.starts_with("llm.")) continue;
    for (auto star = dotted.find('*'); star != std::string::npos; star = dotted.find('*'))
      dotted.replace(star, 1, dotted.starts_with("llm.prices") ? "\"openai:x\"" : "openai");
    auto last_dot = dotted.rfind('.');
    std::string section = dotted.substr(0, last_dot), name = dotted.substr(last_dot + 1);
    // A wrong-typed value: a table where a string, number or boolean is expected.
    std::string text = fmt::format("[{}]\n{} = [1]\n", section, name);
    try {
      load_llm_settings(config_of(text));
      ADD_FAILURE() << dotted << " is listed in known_keys() but not read";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(Settings, TheAnnotatedExampleLoads) {
  Config c;
  c.table = toml::parse_file((std::filesystem::path(KFORGE_SOURCE_DIR) / "examples" / "kforge.toml").string());
  LlmSettings s = load_llm_settings(c);
  // Copied as it is, it picks no provider (nor a local server) for the user: that key is commented out.
  EXPECT_EQ(s.provider, "");
  EXPECT_TRUE(s.prices.find("openai:gpt-4o"));
}

}  // namespace
}  // namespace kforge::llm
