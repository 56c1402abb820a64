// worker_setup_hint (see setup_hint.h).
#include "cli/setup_hint.h"

#include <fmt/format.h>

namespace kforge {

namespace fs = std::filesystem;

std::string worker_setup_hint(const fs::path& data, const fs::path& venv) {
  if (fs::exists(data / "scripts" / "setup.sh"))
    return fmt::format("run {}, which makes {} with torch", (data / "scripts" / "setup.sh").string(),
                       (data / ".venv").string());
  if (fs::exists(data / "setup-worker.sh"))
    return fmt::format("run {}, which makes {} with torch where kforge looks for it",
                       (data / "setup-worker.sh").string(), venv.string());
  return fmt::format("make a Python 3.10+ environment with torch and the packages of {}",
                     (data / "worker" / "requirements.txt").string());
}

}  // namespace kforge
