// API keys must never leak into logs, transcripts, the store or error messages.
// This file knows which environment variables hold secrets, keeps a process-wide
// list of secret values, and redacts them from any text before it is written anywhere.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kforge::llm {

inline constexpr std::string_view kRedacted = "[REDACTED]";

// True for names that hold credentials: the well-known ones (OPENAI_API_KEY,
// ANTHROPIC_API_KEY, HF_TOKEN, ...) and any name matching *_API_KEY, *_APIKEY,
// *_TOKEN, *SECRET*, *PASSWORD*, *PASSWD*, *CREDENTIALS*, *PRIVATE_KEY*, *ACCESS_KEY*
// (case-insensitive).
bool is_secret_env_name(std::string_view name);

// The well-known secret names plus every variable of the current environment for which
// is_secret_env_name() holds; sorted, without duplicates. Environments handed to child
// processes (the evaluation worker) must contain none of these.
std::vector<std::string> secret_env_var_names();

// Adds a value to the redaction list. Values shorter than 6 characters are ignored
// (they would redact ordinary words).
void register_secret(std::string_view value);

// Registers the value of every secret variable currently set. Idempotent.
void register_environment_secrets();

// `text` with every registered secret (and every current secret environment value)
// replaced by kRedacted.
std::string redact_secrets(std::string_view text);

// Throws InputError unless `path` is readable by its owner only (no group/other bits),
// telling the user to chmod 600 it. `what` names the secret ("an API key").
void require_private_file(const std::filesystem::path& path, std::string_view what);

}  // namespace kforge::llm
