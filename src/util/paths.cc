#include "util/paths.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "util/errors.h"

#ifndef KFORGE_SOURCE_DIR
#define KFORGE_SOURCE_DIR ""
#endif

namespace kforge {

namespace fs = std::filesystem;

namespace {

fs::path home() {
  const char* h = std::getenv("HOME");
  return h && *h ? fs::path(h) : fs::path("/tmp");
}

// An XDG base directory: the variable when it holds an absolute path, else ~/<fallback>.
fs::path xdg_dir(const char* variable, const char* fallback) {
  const char* v = std::getenv(variable);
  if (v && *v && fs::path(v).is_absolute()) return fs::path(v);
  return home() / fallback;
}

bool holds_worker(const fs::path& dir) { return fs::exists(dir / "worker" / "kforge_worker"); }

}  // namespace

fs::path data_dir() {
  if (const char* env = std::getenv("KFORGE_HOME"); env && *env) return fs::path(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path root = exe.parent_path().parent_path();
    if (holds_worker(root)) return root;
    if (holds_worker(root / "share" / "kforge")) return root / "share" / "kforge";
  }
  return fs::path(KFORGE_SOURCE_DIR);
}

fs::path legacy_dir() { return home() / ".kforge"; }

fs::path state_dir() {
  if (const char* env = std::getenv("KFORGE_STATE_DIR"); env && *env) return fs::path(env);
  if (fs::is_directory(legacy_dir())) return legacy_dir();
  return xdg_dir("XDG_DATA_HOME", ".local/share") / "kforge";
}

fs::path cache_dir() {
  if (const char* env = std::getenv("KFORGE_CACHE_DIR"); env && *env) return fs::path(env);
  return xdg_dir("XDG_CACHE_HOME", ".cache") / "kforge";
}

fs::path user_config_dir() { return xdg_dir("XDG_CONFIG_HOME", ".config") / "kforge"; }

fs::path user_worker_venv() { return xdg_dir("XDG_DATA_HOME", ".local/share") / "kforge" / "venv"; }

fs::path make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = (fs::path(tmp && *tmp ? tmp : "/tmp") / (prefix + "XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw InternalError(fmt::format("mkdtemp {}: {}", templ, std::strerror(errno)));
  return fs::path(buf.data());
}

}  // namespace kforge
