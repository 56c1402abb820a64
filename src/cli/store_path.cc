#include "cli/store_path.h"

#include "store/store.h"

namespace kforge {

std::filesystem::path store_path(const std::string& db_flag, const Config& config) {
  if (!db_flag.empty()) return db_flag;
  return config.get_string("store.path").value_or(Store::default_path().string());
}

CLI::Option* add_db_option(CLI::App* cmd, std::string& db_flag) {
  return cmd
      ->add_option("--db", db_flag,
                   "SQLite store (default: store.path of kforge.toml, else kforge.db in ~/.kforge where that "
                   "folder exists, else in $XDG_DATA_HOME/kforge, ~/.local/share/kforge)")
      ->type_name("FILE");
}

}  // namespace kforge
