#include "cli/cli_docs.h"

#include <gtest/gtest.h>

#include "cli/commands.h"

namespace kforge {
namespace {

std::string spell(const std::string& name, const std::string& dash) {
  std::string out;
  for (char c : name) out += c == '-' ? dash : std::string(1, c);
  return out;
}

class CliDocs : public ::testing::Test {
 protected:
  void SetUp() override { build_cli(app_, global_, &exit_code_); }

  // Every visible subcommand (nested ones too) and every visible option name of each.
  // `dash`: how the text spells "-" (roff escapes it).
  void expect_all_named(const std::string& text, const CLI::App& app, const std::string& what,
                        const std::string& dash = "-") {
    for (const CLI::Option* o : app.get_options())
      if (o->nonpositional() && !o->get_group().empty()) {
        for (const auto& l : o->get_lnames()) EXPECT_NE(text.find(spell("--" + l, dash)), std::string::npos) << what << ": --" << l;
        for (const auto& s : o->get_snames()) EXPECT_NE(text.find(spell("-" + s, dash)), std::string::npos) << what << ": -" << s;
      }
    for (const CLI::App* s : app.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
      EXPECT_NE(text.find(s->get_name()), std::string::npos) << what << ": " << s->get_name();
      expect_all_named(text, *s, what, dash);
    }
  }

  CLI::App app_{"kforge: turns a PyTorch reference model into fast, verified kernels"};
  GlobalOptions global_;
  int exit_code_ = 0;
};

TEST_F(CliDocs, CompletionsAndManPageNameEverySubcommandAndFlag) {
  expect_all_named(bash_completion(app_), app_, "bash");
  expect_all_named(zsh_completion(app_), app_, "zsh");
  expect_all_named(man_page(app_, "kforge 9.9.9"), app_, "man", "\\-");
}

TEST_F(CliDocs, InternalFlagsStayOutOfCompletionsAndManPage) {
  ASSERT_NE(app_.get_subcommand("run")->get_option_no_throw("--relay-evaluations"), nullptr);
  EXPECT_EQ(bash_completion(app_).find("relay-evaluations"), std::string::npos);
  EXPECT_EQ(zsh_completion(app_).find("relay-evaluations"), std::string::npos);
  EXPECT_EQ(man_page(app_, "kforge 9.9.9").find("relay\\-evaluations"), std::string::npos);
}

TEST_F(CliDocs, CompletionAndManAreListedAsCommands) {
  const std::string bash = bash_completion(app_);
  EXPECT_NE(bash.find("subcommands=\"eval targets llm run report bench model profile doctor completion man\""),
            std::string::npos)
      << bash;
  EXPECT_NE(app_.help().find("completion"), std::string::npos);
  EXPECT_NE(app_.help().find("man"), std::string::npos);
}

TEST_F(CliDocs, TargetCompletesTargetNamesNotFiles) {
  const std::string bash = bash_completion(app_, {"cpu", "cuda"});
  EXPECT_NE(bash.find("if [[ $prev == --target || $prev == -t ]]; then\n    COMPREPLY=($(compgen -W \"cpu cuda\""),
            std::string::npos)
      << bash;
  EXPECT_NE(zsh_completion(app_, {"cpu", "cuda"}).find("'--target[Target platform (see `kforge targets`)]:TEXT:(cpu cuda)'"),
            std::string::npos);
}

TEST_F(CliDocs, ManPageShowsFlagsWithoutAValue) {
  const std::string man = man_page(app_, "kforge 9.9.9");
  EXPECT_NE(man.find(".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\n"), std::string::npos) << man.substr(0, 2000);
  EXPECT_EQ(man.find("\\-\\-no\\-timing\\fR \\fI"), std::string::npos);
  EXPECT_NE(man.find("\\-\\-trials\\fR \\fIINT"), std::string::npos);
}

TEST_F(CliDocs, ManPageIsRoff) {
  const std::string man = man_page(app_, "kforge 9.9.9");
  EXPECT_EQ(man.rfind(".TH KFORGE 1", 0), 0u);
  EXPECT_NE(man.find(".SS \"kforge eval\""), std::string::npos);
  EXPECT_NE(man.find(".SS \"kforge llm ping\""), std::string::npos);
  EXPECT_NE(man.find("\\-\\-trials"), std::string::npos);  // dashes escaped
  EXPECT_NE(man.find(".SH EXIT STATUS"), std::string::npos);
  EXPECT_NE(man.find("\n.B 4\n"), std::string::npos);
}

}  // namespace
}  // namespace kforge
