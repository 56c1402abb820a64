// "did you mean ...?" for a mistyped subcommand or option.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kforge {

// Edit distance (insertions, deletions, substitutions and swaps of neighbours, each 1).
int edit_distance(const std::string& a, const std::string& b);

// The choice nearest to `word`, when one is near enough to be what was meant: at most 2 edits,
// and fewer than half of the word's letters; ties go to the earlier choice.
std::optional<std::string> nearest(const std::string& word, const std::vector<std::string>& choices);

// What a command line (`args`: argv without the program name) mistyped, as the one line kforge
// prints before parsing it: a word where `app` or one of its subcommands expects a subcommand
// ("unknown command 'evall' (did you mean eval?); see `kforge --help`"), or a long option that
// the subcommand it follows does not know, when one it knows is near ("unknown option '--trails'
// of `kforge eval` (did you mean --trials?); ..."). nullopt when neither: parsing says the rest.
std::optional<std::string> find_mistake(const CLI::App& app, const std::vector<std::string>& args);

}  // namespace kforge
