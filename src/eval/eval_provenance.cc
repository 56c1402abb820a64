#include "eval/eval_provenance.h"

#include "util/provenance.h"

namespace kforge {

void add_provenance(nlohmann::json& doc) {
  nlohmann::json& env = doc["env"];
  const nlohmann::json python = env.value("python", nlohmann::json());
  const nlohmann::json found = environment(python.is_string() ? python.get<std::string>() : "");
  for (const auto& [key, value] : found.items())
    if (!env.contains(key) || (key == "torch" && env[key] == "")) env[key] = value;
}

}  // namespace kforge
