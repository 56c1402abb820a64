#include "cli/result_output.h"

#include <fstream>

#include <fmt/format.h>

#include "util/errors.h"

namespace kforge {

void ResultOutput::write_json(const nlohmann::json& doc) const {
  if (json_path.empty()) return;
  const std::string text = doc.dump(2) + "\n";
  if (json_on_stdout()) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return;
  }
  std::ofstream out(json_path);
  if (!(out << text)) throw InputError(fmt::format("cannot write {}", json_path));
}

CLI::Option* add_json_option(CLI::App* cmd, ResultOutput& out, const std::string& what) {
  return cmd->add_option("--json", out.json_path,
                         fmt::format("Write {} as JSON to FILE (`-`: standard output, which then carries the JSON "
                                     "alone)", what))
      ->type_name("FILE");
}

}  // namespace kforge
