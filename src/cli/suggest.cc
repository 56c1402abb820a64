#include "cli/suggest.h"

#include <fmt/format.h>

#include <algorithm>

namespace kforge {

int edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment distance: Levenshtein plus transpositions of adjacent letters.
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      const int cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[n][m];
}

std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& choices) {
  std::optional<std::string> best;
  int best_distance = 0;
  for (const auto& c : choices) {
    const int d = edit_distance(word, c);
    if (d > 2 || 2 * d >= static_cast<int>(word.size())) continue;
    if (!best || d < best_distance) best = c, best_distance = d;
  }
  return best;
}

namespace {

// `name` ("--trials", "-q") among the options of `cmd` and of the commands above it (global
// options may follow a subcommand).
const CLI::Option* find_option(const CLI::App* cmd, const std::string& name) {
  for (; cmd; cmd = cmd->get_parent())
    if (const CLI::Option* o = cmd->get_option_no_throw(name)) return o;
  return nullptr;
}

// The long options a user sees in the help of `cmd` and of the commands above it.
std::vector<std::string> long_options(const CLI::App* cmd) {
  std::vector<std::string> names;
  for (; cmd; cmd = cmd->get_parent())
    for (const CLI::Option* o : cmd->get_options([](const CLI::Option* o) { return !o->get_group().empty(); }))
      for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  return names;
}

bool has_positionals(const CLI::App* cmd) {
  return !cmd->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty();
}

}  // namespace

std::optional<std::string> find_mistake(const CLI::App& app, const std::vector<std::string>& args) {
  const CLI::App* cmd = &app;
  std::string path = app.get_name().empty() ? "kforge" : app.get_name();
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& word = args[i];
    if (word == "--") break;
    if (word.size() > 1 && word[0] == '-') {
      const std::string name = word.substr(0, word.find('='));
      if (const CLI::Option* o = find_option(cmd, name)) {
        if (word.find('=') == std::string::npos && o->get_expected_min() > 0) ++i;  // its value
      } else if (name.rfind("--", 0) == 0) {
        if (auto near = nearest(name, long_options(cmd)))
          return fmt::format("unknown option '{}' of `{}` (did you mean {}?); see `{} --help`", name, path, *near,
                             path);
      }
      continue;
    }
    if (cmd->get_subcommands({}).empty()) continue;  // a positional argument
    auto named = cmd->get_subcommands([&word](const CLI::App* s) { return s->check_name(word); });
    if (!named.empty()) {
      cmd = named.front();
      path += " " + word;
      continue;
    }
    if (has_positionals(cmd)) continue;
    std::vector<std::string> names;
    for (const CLI::App* s : cmd->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); }))
      names.push_back(s->get_name());
    auto near = nearest(word, names);
    return fmt::format("unknown command '{}'{}; see `{} --help`", word,
                       near ? fmt::format(" (did you mean {}?)", *near) : "", path);
  }
  return std::nullopt;
}

}  // namespace kforge
