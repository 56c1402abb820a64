// What a reply from the candidate's process must look like before kforge reads a field of it.
//
// The candidate's worker runs untrusted code in its own interpreter: anything it writes on its reply
// channel (fd 3) is a claim, and code there can reach the channel itself (frames, os.write). A reply
// that does not answer the request kforge is waiting for (another id, another command, one nobody
// asked for, a second one), or whose fields have the wrong types, makes that candidate `rejected`
// with check `protocol`; it never reaches a decoder that would throw and end the session.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kforge {

// Why `body`, a parsed JSON value received while waiting for the candidate's reply to `cmd` (with
// request arguments `args`) and id `id`, is not that reply; nullopt when it is well formed.
std::optional<std::string> candidate_reply_problem(const std::string& cmd, const nlohmann::json& args,
                                                   std::uint64_t id, const nlohmann::json& body);

}  // namespace kforge
