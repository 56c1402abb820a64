// `kforge llm ping`: sends one short request through any provider and prints the reply,
// token counts and latency, to check keys, base URLs and the exec:/manual:/replay: setups
// before a long run.
#include <memory>
#include <string>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/logging.h"
#include "cli/result_output.h"
#include "config/config.h"
#include "llm/cancel.h"
#include "llm/errors.h"
#include "llm/provider_factory.h"
#include "llm/secrets.h"
#include "llm/usage.h"
#include "util/provenance.h"

namespace kforge {

namespace {

struct PingArgs {
  std::string llm;
  std::string base_url;
  std::string record;
  bool replay_by_position = false;
  std::string prompt = "Reply with the single word: pong";
  int max_tokens = 256;
  ResultOutput out;
};

int run_ping(const PingArgs& args, const GlobalOptions& global) {
  setup_logging(global);
  llm::install_sigint_handler();
  Config config = load_config(global.config_path);

  llm::ProviderOptions options;
  options.spec = args.llm;
  options.base_url = args.base_url;
  options.record_path = args.record;
  options.replay_by_position = args.replay_by_position;
  options.meter = std::make_shared<llm::UsageMeter>();
  auto provider = llm::make_provider(options, config);

  llm::Request request;
  request.messages.push_back(llm::Message::text(llm::Role::kUser, args.prompt));
  request.max_tokens = args.max_tokens;

  try {
    llm::Response r = provider->complete(request);
    std::string text = llm::redact_secrets(r.text);
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
    const double latency_s = r.latency.count() / 1000.0;
    std::FILE* out = args.out.text();
    fmt::print(out, "reply:    {}\n", text);
    fmt::print(out, "provider: {} (model {})\n", r.provider, r.model);
    fmt::print(out, "tokens:   {} input, {} output\n", r.usage.input_tokens, r.usage.output_tokens);
    fmt::print(out, "latency:  {:.3f} s ({} attempt{})\n", latency_s, r.attempts, r.attempts == 1 ? "" : "s");
    fmt::print(out, "finish:   {} ({})\n", llm::finish_reason_name(r.finish_reason), r.raw_finish_reason);
    if (r.cost_usd)
      fmt::print(out, "cost:     ${:.6f} USD\n", *r.cost_usd);
    else
      fmt::print(out, "cost:     unknown (no [llm.prices.\"{}\"] entry in kforge.toml)\n", r.provider);
    args.out.write_json({{"reply", text},
                         {"provider", r.provider},
                         {"model", r.model},
                         {"input_tokens", r.usage.input_tokens},
                         {"output_tokens", r.usage.output_tokens},
                         {"latency_s", latency_s},
                         {"attempts", r.attempts},
                         {"finish_reason", llm::finish_reason_name(r.finish_reason)},
                         {"cost_usd", r.cost_usd ? nlohmann::json(*r.cost_usd) : nlohmann::json()},
                         {"env", provenance()}});
    return kExitOk;
  } catch (const llm::LlmError& e) {
    if (e.kind() == llm::ErrorKind::kCancelled) {
      fmt::print(stderr, "kforge: interrupted\n");
      return kExitFailed;
    }
    fmt::print(stderr, "kforge: error: {}\n", e.what());
    return llm::is_user_error(e.kind()) ? kExitUsage : kExitFailed;
  }
}

}  // namespace

void register_llm_command(CLI::App& app, GlobalOptions& global, int* exit_code) {
  auto* llm = app.add_subcommand("llm", "Talk to the configured LLM provider");
  llm->require_subcommand(1);
  auto args = std::make_shared<PingArgs>();
  auto* ping = llm->add_subcommand("ping", "Send one short request and print the reply, tokens and latency");
  ping->add_option("--llm", args->llm,
                   "Provider as KIND:ARGUMENT: openai:MODEL, anthropic:MODEL, exec:COMMAND, manual:DIR, "
                   "replay:FILE (default: [llm] provider in kforge.toml)");
  ping->add_option("--llm-base-url", args->base_url,
                   "Server for openai:/anthropic: (default: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, [llm] base_url)");
  ping->add_option("--record", args->record, "Write the request and reply to this JSONL transcript");
  ping->add_flag("--replay-by-position", args->replay_by_position,
                 "replay: answer requests in recorded order instead of matching them");
  ping->add_option("--prompt", args->prompt, "Text to send")->capture_default_str();
  ping->add_option("--max-tokens", args->max_tokens, "Reply length limit in tokens")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  add_json_option(ping, args->out, "the reply, its provider, tokens, latency and cost");
  ping->callback([args, &global, exit_code] { *exit_code = run_ping(*args, global); });
}

}  // namespace kforge
