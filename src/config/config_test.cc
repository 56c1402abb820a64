// kforge.toml: where it is found, which keys kforge knows, and the annotated example.
#include "config/config.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "util/scoped_env.h"

#include "util/errors.h"
#include "util/paths.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;


void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

// Every dotted key of a table, the way check_keys names them.
void collect(const toml::table& t, const std::string& prefix, std::set<std::string>& out) {
  for (const auto& [k, node] : t) {
    std::string name = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (auto sub = node.as_table()) collect(*sub, name, out);
    else out.insert(name);
  }
}

TEST(Config, TheAnnotatedExampleUsesOnlyKnownKeysOfTheRightType) {
  fs::path example = fs::path(KFORGE_SOURCE_DIR) / "examples" / "kforge.toml";
  EXPECT_EQ(check_keys(toml::parse_file(example.string())), std::vector<std::string>{});
  // Keys whose value depends on the machine are commented out ("# key = value"), so the file works
  // when copied as is; they must still be known keys of the right type where they stand.
  std::ifstream in(example);
  std::stringstream uncommented;
  const std::regex commented_key(R"(^# ?([A-Za-z_][A-Za-z0-9_.-]*\s*=.*)$)");
  for (std::string line; std::getline(in, line);) uncommented << std::regex_replace(line, commented_key, "$1") << "\n";
  toml::table t = toml::parse(uncommented.str());
  EXPECT_EQ(check_keys(t), std::vector<std::string>{});
  std::set<std::string> keys;
  collect(t, "", keys);
  EXPECT_GE(keys.size(), 20u);
  // The example shows every key but the API keys, which it must not hold (it would need chmod 600).
  for (const auto& k : known_keys()) {
    if (std::string(k.dotted).starts_with("llm.api_keys")) continue;
    bool shown = false;
    for (const auto& have : keys) {
      std::string pattern(k.dotted);
      if (auto star = pattern.find("*"); star != std::string::npos)
        shown |= have.starts_with(pattern.substr(0, star)) && have.ends_with(pattern.substr(star + 1));
      else shown |= have == pattern;
    }
    EXPECT_TRUE(shown) << k.dotted << " is not in examples/kforge.toml";
  }
}

TEST(Config, UnknownKeysAndTablesAreNamed) {
  toml::table t = toml::parse(R"(
[worker]
pyhton = "/usr/bin/python3"
[llm.retries]
max_attempts = 3
[llm.prices."openai:gpt-4.1"]
input_per_mtok = 2.0
output_per_mtok = 8.0
per_call = 1.0
)");
  EXPECT_EQ(sorted(check_keys(t)), sorted({"unknown key worker.pyhton", "unknown table [llm.retries]",
                                           "unknown key llm.prices.openai:gpt-4.1.per_call"}));
}

TEST(Config, WrongTypesAreNamed) {
  toml::table t = toml::parse("worker.python = 3\nllm.stream = \"yes\"\nllm.api_keys.openai = 1\n");
  EXPECT_EQ(sorted(check_keys(t)), sorted({"worker.python must be a string", "llm.stream must be true or false",
                                           "llm.api_keys.openai must be a string"}));
}

class ConfigFileTest : public ::testing::Test {
 protected:
  fs::path home = make_temp_dir("kforge-config-test-");
  ScopedEnv h{"HOME", home.string()};
  ScopedEnv c{"KFORGE_CONFIG", std::nullopt};
  ScopedEnv x{"XDG_CONFIG_HOME", std::nullopt};
  ~ConfigFileTest() override { fs::remove_all(home); }
};

TEST_F(ConfigFileTest, WrongTypeStopsLoadingUnknownKeyDoesNot) {
  write(home / "bad.toml", "[store]\npath = 1\n");
  EXPECT_THROW(load_config(home / "bad.toml"), InputError);
  write(home / "typo.toml", "[store]\npaht = \"x.db\"\n");
  EXPECT_EQ(load_config(home / "typo.toml").path, home / "typo.toml");
}

TEST_F(ConfigFileTest, FoundUnderXdgConfigHome) {
  ASSERT_FALSE(fs::exists("kforge.toml"));  // ./kforge.toml would be found first
  EXPECT_EQ(default_config_path(), std::nullopt);
  write(home / ".config/kforge/kforge.toml", "[store]\npath = \"a.db\"\n");
  EXPECT_EQ(default_config_path(), home / ".config/kforge/kforge.toml");
  ScopedEnv x2{"XDG_CONFIG_HOME", (home / "xdg").string()};
  write(home / "xdg/kforge/kforge.toml", "[store]\npath = \"b.db\"\n");
  EXPECT_EQ(load_config(std::nullopt).get_string("store.path"), "b.db");
}

TEST_F(ConfigFileTest, TheFileOfEarlierVersionsIsStillFound) {
  write(home / ".kforge/kforge.toml", "[store]\npath = \"old.db\"\n");
  EXPECT_EQ(load_config(std::nullopt).get_string("store.path"), "old.db");
  // A file in the XDG location is preferred once it exists.
  write(home / ".config/kforge/kforge.toml", "[store]\npath = \"new.db\"\n");
  EXPECT_EQ(load_config(std::nullopt).get_string("store.path"), "new.db");
}

TEST_F(ConfigFileTest, DeviceMemoryCapIsAPositiveNumberOfGiB) {
  write(home / "none.toml", "[store]\npath = \"a.db\"\n");
  EXPECT_EQ(device_memory_gb(load_config(home / "none.toml")), std::nullopt);
  write(home / "cap.toml", "[memory]\ndevice_gb = 0.5\n");
  EXPECT_EQ(device_memory_gb(load_config(home / "cap.toml")), 0.5);
  write(home / "zero.toml", "[memory]\ndevice_gb = 0\n");
  EXPECT_THROW(device_memory_gb(load_config(home / "zero.toml")), InputError);
}

}  // namespace
}  // namespace kforge
