#include "cli/store_path.h"

#include "store/store.h"

namespace kforge {

std::filesystem::path store_path(const std::string& db_flag, const Config& config) {
  if (!db_flag.empty()) return db_flag;
  return config.get_string("store.path").value_or(Store::default_path().string());
}

}  // namespace kforge
