// Secret detection and redaction (see secrets.h).
#include "llm/secrets.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "util/errors.h"

extern char** environ;

namespace kforge::llm {

namespace {

constexpr std::string_view kWellKnown[] = {
    "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",    "GOOGLE_API_KEY", "MISTRAL_API_KEY",    "GROQ_API_KEY",
    "TOGETHER_API_KEY",  "DEEPSEEK_API_KEY", "HF_TOKEN",         "HUGGING_FACE_HUB_TOKEN",
    "GITHUB_TOKEN",      "GH_TOKEN",       "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
};

constexpr std::size_t kMinSecretLength = 6;

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

struct Registry {
  std::mutex mutex;
  std::set<std::string> values;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

bool is_secret_env_name(std::string_view name) {
  const std::string n = upper(name);
  for (auto known : kWellKnown)
    if (n == known) return true;
  if (ends_with(n, "_API_KEY") || ends_with(n, "_APIKEY") || ends_with(n, "_TOKEN") || n == "TOKEN" ||
      n == "API_KEY")
    return true;
  for (std::string_view part : {"SECRET", "PASSWORD", "PASSWD", "CREDENTIALS", "PRIVATE_KEY", "ACCESS_KEY"})
    if (n.find(part) != std::string::npos) return true;
  return false;
}

std::vector<std::string> secret_env_var_names() {
  std::set<std::string> names(std::begin(kWellKnown), std::end(kWellKnown));
  for (char** env = environ; env && *env; ++env) {
    std::string_view entry(*env);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    std::string_view name = entry.substr(0, eq);
    if (is_secret_env_name(name)) names.emplace(name);
  }
  return {names.begin(), names.end()};
}

void register_secret(std::string_view value) {
  if (value.size() < kMinSecretLength) return;
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  r.values.emplace(value);
}

void register_environment_secrets() {
  for (char** env = environ; env && *env; ++env) {
    std::string_view entry(*env);
    auto eq = entry.find('=');
    if (eq == std::string_view::npos || eq == 0) continue;
    if (is_secret_env_name(entry.substr(0, eq))) register_secret(entry.substr(eq + 1));
  }
}

std::string redact_secrets(std::string_view text) {
  register_environment_secrets();
  std::vector<std::string> values;
  {
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    values.assign(r.values.begin(), r.values.end());
  }
  // Longest first, so a secret that contains another is replaced whole.
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  std::string out(text);
  for (const auto& value : values) {
    std::size_t pos = 0;
    while ((pos = out.find(value, pos)) != std::string::npos) {
      out.replace(pos, value.size(), kRedacted);
      pos += kRedacted.size();
    }
  }
  return out;
}

void require_private_file(const std::filesystem::path& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;  // a missing file holds no secret
  if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw InputError(fmt::format(
        "{} holds {} but other users can access it (mode {:03o}); run `chmod 600 {}` or move the key "
        "into the environment",
        path.string(), what, st.st_mode & 0777, path.string()));
  }
}

}  // namespace kforge::llm
