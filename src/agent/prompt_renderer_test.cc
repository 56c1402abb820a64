#include "agent/prompt_renderer.h"

#include <gtest/gtest.h>

#include "util/errors.h"

namespace kforge::agent {
namespace {

TEST(PromptRenderer, NothingIsHtmlEscaped) {
  EXPECT_EQ(render_template("{{code}}|{{{code}}}", {{"code", "a < b && c > \"d\""}}),
            "a < b && c > \"d\"|a < b && c > \"d\"");
}

TEST(PromptRenderer, ListsSectionsAndNumbers) {
  nlohmann::json ctx = {{"items", {{{"rank", 1}, {"text", "fuse"}}, {{"rank", 2}, {"text", "tile"}}}},
                        {"ratio", 2.5},
                        {"none", nullptr},
                        {"flag", true}};
  EXPECT_EQ(render_template("{{#items}}{{rank}}. {{text}}\n{{/items}}{{ratio}}{{#none}}X{{/none}}{{#flag}}!{{/flag}}", ctx),
            "1. fuse\n2. tile\n2.5!");
}

TEST(PromptRenderer, BadTemplatesAreInputErrors) {
  EXPECT_THROW(render_template("{{#open}}", {}), InputError);
}

TEST(PromptRenderer, BundledPromptsRender) {
  auto lib = PromptLibrary::load(std::filesystem::path(KFORGE_SOURCE_DIR) / "prompts");
  for (const char* name : {"generate.system", "generate.user", "fix.user", "format.user", "analyze.system", "analyze.user"}) {
    ASSERT_TRUE(lib.has(name)) << name;
    EXPECT_NO_THROW(lib.render(name, nlohmann::json::object())) << name;
  }
  EXPECT_THROW(lib.render("nope", {}), InputError);
}

}  // namespace
}  // namespace kforge::agent
