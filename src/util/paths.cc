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
}  // namespace

fs::path data_dir() {
  if (const char* env = std::getenv("KFORGE_HOME"); env && *env) return fs::path(env);
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path root = exe.parent_path().parent_path();
    if (fs::exists(root / "worker" / "kforge_worker")) return root;
  }
  return fs::path(KFORGE_SOURCE_DIR);
}

fs::path state_dir() {
  if (const char* env = std::getenv("KFORGE_STATE_DIR"); env && *env) return fs::path(env);
  return home() / ".kforge";
}

fs::path cache_dir() {
  if (const char* env = std::getenv("KFORGE_CACHE_DIR"); env && *env) return fs::path(env);
  return home() / ".cache" / "kforge";
}

fs::path make_temp_dir(const std::string& prefix) {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = (fs::path(tmp && *tmp ? tmp : "/tmp") / (prefix + "XXXXXX")).string();
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!mkdtemp(buf.data())) throw InternalError(fmt::format("mkdtemp {}: {}", templ, std::strerror(errno)));
  return fs::path(buf.data());
}

}  // namespace kforge
