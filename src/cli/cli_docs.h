// Shell completion scripts and the man page, generated from the command-line definition itself
// (the CLI11 App tree), so they name every subcommand and option the binary accepts.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kforge {

// For `source <(kforge completion bash)` or a file in bash-completion's completions folder.
// `targets`: the names `--target` completes to.
std::string bash_completion(const CLI::App& app, const std::vector<std::string>& targets = {});
// For a file named _kforge on $fpath.
std::string zsh_completion(const CLI::App& app, const std::vector<std::string>& targets = {});
// kforge(1) in roff (man 7 man).
std::string man_page(const CLI::App& app, const std::string& version);

// Registers the `kforge completion bash|zsh` and `kforge man` subcommands, which print the
// above for the app they were added to.
void register_docs_commands(CLI::App& app, const std::string& version, int* exit_code);

}  // namespace kforge
