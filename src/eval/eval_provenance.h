// Completes an EvalResult's `env` with where it ran, before it is stored or printed: the producer
// side of the document (the evaluation itself does not know kforge's command line or the host).
#pragma once

#include <nlohmann/json.hpp>

namespace kforge {

// Adds environment(doc["env"]["python"]) (kforge version, command line, host CPU and GPUs, the
// interpreter's Python and torch versions) to doc["env"], next to what the evaluation recorded there
// (interpreter, threads, and torch as the worker imported it, which wins: a failed evaluation that
// never got that far still says which torch is installed).
void add_provenance(nlohmann::json& doc);

}  // namespace kforge
