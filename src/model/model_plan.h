// What `kforge model` does between the worker's analysis and its report, as data: which regions go
// through the loop, the `kforge run` each one is, what each run gave, and the state a resumed
// `kforge model --resume N` continues from (model.json in the output folder).
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kforge::model {

struct ModelOptions {
  std::string model;                  // absolute path of the model file
  std::string hf_config;              // a transformers architecture: the model file is written from it
  std::vector<std::string> sets;      // NAME=VALUE overrides of the model file's module-level sizes
  std::string target = "cpu";
  std::string device;                 // empty: the target's
  std::string llm;
  int top = 3;                        // regions through the loop, by share
  std::vector<std::string> regions;   // only these regions (names or kinds) go through it; empty: any
  std::vector<std::string> run_args;  // given to every region's `kforge run` (--rounds 2, --seed 1, ...)
  int threads = 0;
  int profile_reps = 10;              // forwards timed to attribute the model's time
  int e2e_reps = 20;                  // interleaved forwards per variant end to end
  bool e2e_compile = true;            // torch.compile among the end-to-end variants
  std::string db;                     // --db for the runs (empty: the default store)
  std::string python;                 // the worker's interpreter: the model's and every region run's
  std::string out_dir;                // kforge-out/model-N
  // How the regions' runs are scheduled (cli/executor_flags.h, docs/model.md#executors-and-budget).
  std::string executor = "local";     // where their evaluations run: local, ray
  std::string ray_address;
  int jobs = 0;                       // region runs in progress at once (0: as `kforge bench` chooses)
  double budget_minutes = 0;          // wall time of the loop phase for the whole model (0: no limit)
  // Transcripts: each region's run records its LLM calls to RECORD_DIR/<transcript_name>; `--llm
  // replay:DIR` (a folder) replays each region's run from the same file name in DIR.
  std::string record_dir;
  bool replay_by_position = false;
};

nlohmann::json to_json(const ModelOptions& options);
ModelOptions options_from_json(const nlohmann::json& json);

// The regions that go through the loop: those written as problems (not skipped), in the analysis's
// order (by share), that `selectors` name (a region's name or kind; empty: any), the first `top`.
std::vector<nlohmann::json> top_regions(const nlohmann::json& analysis, int top,
                                        const std::vector<std::string>& selectors = {});

// The selectors that name no region of the analysis (a typo, or a kind this model does not have).
std::vector<std::string> unmatched_selectors(const nlohmann::json& analysis, const std::vector<std::string>& selectors);

// A region's name for its files: its first instance's modules (`mlp.c_fc+mlp.act`), which another
// machine's profile names the same where it may number the regions in another order; `model` where
// the region is the model itself.
std::string region_stem(const nlohmann::json& region);

// A region's transcript file name: `<region_stem>.jsonl`.
std::string transcript_name(const nlohmann::json& region);

// The --llm of a region's run: `replay:DIR` with DIR a folder becomes `replay:DIR/<transcript_name>`,
// `manual:DIR` becomes `manual:DIR/<region_stem>`; other kinds are every region's as given.
std::string region_llm(const std::string& llm, const nlohmann::json& region);

// `kforge run` for one region: fresh into `run_dir`, or `--resume RUN` of an earlier one.
std::vector<std::string> run_argv(const std::string& kforge, const ModelOptions& options, const nlohmann::json& region,
                                  const std::filesystem::path& run_dir, std::int64_t resume_run);

// What a region's run gave, from its summary.json: {run, status, file (best.py, when there is one),
// speedup (the best's over eager)}.
nlohmann::json kernel_entry(const nlohmann::json& run_summary);

// `argv` with `--time-limit` at most `seconds` (rounded up to whole seconds): any --time-limit it
// holds already (`--time-limit S` or `--time-limit=S`) is replaced by the smaller of the two.
std::vector<std::string> with_time_limit(std::vector<std::string> argv, double seconds);

// Whether `argv` holds `flag` (as a word of its own).
bool has_flag(const std::vector<std::string>& argv, const std::string& flag);

// From the log of a `kforge run` that ended without a summary: the run it created (0 if it said
// none), so that a resume continues it, and its last line that states an error ("" if none).
std::int64_t run_id_in_log(const std::string& log);
std::string error_line_in_log(const std::string& log);

// The entry of a region that did not start because the loop's budget was used up.
nlohmann::json skipped_for_budget(double budget_minutes);

// Whether a run needs no more work: it finished (with or without a faster kernel).
bool run_done(const nlohmann::json& kernel);
// A run that stopped without finishing and resumes where it stopped: interrupted, or its model did
// not answer (llm_error). `kforge model` stops there too, to be resumed, rather than finish without it.
bool run_resumable(const nlohmann::json& kernel);

// `base`/model-N for the first N not taken.
std::filesystem::path next_model_dir(const std::filesystem::path& base);

}  // namespace kforge::model
