#include "bench/eval_request.h"

#include <cstring>
#include <fstream>

#include <fmt/format.h>

#include "util/errors.h"
#include "util/files.h"

namespace kforge::bench {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

constexpr char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64_encode(const std::string& in) {
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  std::size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8) |
                       static_cast<unsigned char>(in[i + 2]);
    out += {kBase64[v >> 18], kBase64[(v >> 12) & 63], kBase64[(v >> 6) & 63], kBase64[v & 63]};
  }
  if (i + 1 == in.size()) {
    const unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += {kBase64[v >> 18], kBase64[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const unsigned v = (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += {kBase64[v >> 18], kBase64[(v >> 12) & 63], kBase64[(v >> 6) & 63], '='};
  }
  return out;
}

std::string base64_decode(const std::string& in) {
  std::string out;
  unsigned v = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const char* at = std::strchr(kBase64, c);
    if (c == '\0' || !at) throw InputError("evaluation request: a problem data file is not base64");
    v = (v << 6) | static_cast<unsigned>(at - kBase64);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((v >> bits) & 0xff));
    }
  }
  return out;
}

// The problem's weights, `<stem>.pt` beside it (the region problems of `kforge model` load theirs so).
json problem_data(const fs::path& problem) {
  json data = json::array();
  fs::path weights = problem;
  weights.replace_extension(".pt");
  if (!fs::is_regular_file(weights)) return data;
  if (fs::file_size(weights) > kMaxProblemDataBytes)
    throw InputError(fmt::format("{} is {} MiB: a problem's weights travel to a node with each evaluation, and at most {} MiB do",
                                 weights.string(), fs::file_size(weights) >> 20, kMaxProblemDataBytes >> 20));
  data.push_back({{"file", weights.filename().string()}, {"base64", base64_encode(read_file(weights))}});
  return data;
}

}  // namespace

json make_eval_request(const EvalOptions& o) {
  json r = {{"version", kEvalRequestVersion},
            {"kind", "evaluation"},
            {"problem", {{"file", o.problem.filename().string()}, {"source", read_file(o.problem)},
                         {"data", problem_data(o.problem)}}},
            {"candidate", {{"file", o.candidate.filename().string()}, {"source", read_file(o.candidate)}}},
            {"target", o.target.name},
            {"device", o.device},
            {"overrides", o.overrides},
            {"shapes", o.shapes},
            {"trials", o.trials},
            {"variant_trials", o.variant_trials},
            {"timeout_s", o.timeout_s},
            {"reference_timeout_s", o.reference_timeout_s},
            {"timing", o.timing},
            {"compile_only", o.compile_only},
            {"warmup", o.warmup},
            {"reps", o.reps},
            {"block", o.block},
            {"compile_baseline", o.compile_baseline},
            {"threads", o.threads},
            {"seed", o.seed ? json(*o.seed) : json()},
            {"python", o.python},
            {"precision", o.precision},
            {"sol_slack", o.sol_slack},
            {"speedup_warn_factor", o.speedup_warn_factor},
            {"sandbox", o.sandbox}};
  return r;
}

json make_pair_request(const EvalOptions& options, const fs::path& best, const fs::path& challenger) {
  EvalOptions o = options;
  o.candidate = best;
  o.timing = true;
  json r = make_eval_request(o);
  r["kind"] = "pair";
  r["challenger"] = {{"file", challenger.filename().string()}, {"source", read_file(challenger)}};
  return r;
}

bool is_pair_request(const json& request) { return request.value("kind", "") == "pair"; }

namespace {

// A plain file name: a request must not write outside its folder.
std::string safe_file_name(const json& entry, const char* what) {
  std::string name = entry.at("file").get<std::string>();
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos)
    throw InputError(fmt::format("evaluation request: bad {} file name '{}'", what, name));
  return name;
}

fs::path write_source(const json& entry, const char* what, const fs::path& dir) {
  fs::create_directories(dir);
  fs::path path = dir / safe_file_name(entry, what);
  std::ofstream out(path, std::ios::binary);
  out << entry.at("source").get<std::string>();
  if (!out) throw InputError(fmt::format("evaluation request: cannot write {}", path.string()));
  return path;
}

}  // namespace

EvalOptions eval_options_from_request(const json& r, const TargetRegistry& registry, const fs::path& workdir) {
  if (r.value("version", 0) != kEvalRequestVersion)
    throw InputError(fmt::format("evaluation request version {} (this kforge reads {})", r.value("version", 0),
                                 kEvalRequestVersion));
  const std::string kind = r.value("kind", "");
  if (kind != "evaluation" && kind != "pair")
    throw InputError(fmt::format("evaluation request: unknown kind '{}' (evaluation, pair)", kind));
  EvalOptions o;
  try {
    o.target = registry.get(r.at("target").get<std::string>());
    // Separate folders: the candidate's sandbox hides the problem file by its path.
    o.problem = write_source(r.at("problem"), "problem", workdir / "problem");
    for (const auto& d : r.at("problem").value("data", json::array())) {  // beside it, where it reads them
      std::ofstream out(workdir / "problem" / safe_file_name(d, "problem data"), std::ios::binary);
      out << base64_decode(d.at("base64").get<std::string>());
      if (!out) throw InputError("evaluation request: cannot write a problem data file");
    }
    o.candidate = write_source(r.at("candidate"), "candidate", workdir / "candidate");
    o.device = r.at("device").get<std::string>();
    o.overrides = r.at("overrides").get<std::map<std::string, std::string>>();
    o.shapes = r.at("shapes").get<int>();
    o.trials = r.at("trials").get<int>();
    o.variant_trials = r.at("variant_trials").get<int>();
    o.timeout_s = r.at("timeout_s").get<double>();
    o.reference_timeout_s = r.at("reference_timeout_s").get<double>();
    o.timing = r.at("timing").get<bool>();
    o.compile_only = r.at("compile_only").get<bool>();
    o.warmup = r.at("warmup").get<int>();
    o.reps = r.at("reps").get<int>();
    o.block = r.at("block").get<int>();
    o.compile_baseline = r.at("compile_baseline").get<bool>();
    o.threads = r.at("threads").get<int>();
    if (!r.at("seed").is_null()) o.seed = r.at("seed").get<std::uint64_t>();
    o.python = r.at("python").get<std::string>();
    o.precision = r.at("precision").get<std::string>();
    o.sol_slack = r.at("sol_slack").get<double>();
    o.speedup_warn_factor = r.at("speedup_warn_factor").get<double>();
    o.sandbox = r.at("sandbox").get<bool>();
  } catch (const json::exception& e) {
    throw InputError(fmt::format("malformed evaluation request: {}", e.what()));
  }
  o.log_dir = workdir / "logs";
  return o;
}

fs::path challenger_from_request(const json& r, const fs::path& workdir) {
  if (!is_pair_request(r) || !r.contains("challenger")) throw InputError("evaluation request: not a pair with a challenger");
  try {
    // A folder of its own, as the candidate's: each sandbox sees only its own file.
    return write_source(r.at("challenger"), "challenger", workdir / "challenger");
  } catch (const json::exception& e) {
    throw InputError(fmt::format("malformed evaluation request: {}", e.what()));
  }
}

}  // namespace kforge::bench
