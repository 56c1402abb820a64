#include "loop/run_transcript.h"

#include <unistd.h>

#include <gtest/gtest.h>

namespace kforge::loop {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

TEST(RunTranscript, PromptsRepliesAndCandidatesInOrder) {
  const fs::path db = fs::temp_directory_path() / ("kforge-transcript-" + std::to_string(getpid()) + ".db");
  {
    Store store(db);
    std::int64_t run = store.create_run("/p.py", "sha", "cpu", "replay:x", json::object());
    json request = {{"messages",
                     {{{"role", "system"}, {"content", {{{"type", "text"}, {"text", "You write kernels."}}}}},
                      {{"role", "user"}, {"content", {{{"type", "text"}, {"text", "Make this fast:\n```python\nx\n```"}}}}}}},
                    {"max_tokens", 100}};
    store.add_llm_call(run, "r1s0.gen", request, {{"text", "Here it is."}, {"usage", {{"input_tokens", 12}, {"output_tokens", 3}}}});
    store.add_run_candidate(run, "r1s0", "class ModelNew: pass\n");
    store.add_llm_call(run, "r1.analysis", request, {{"text", "Fuse the loops."}, {"usage", {{"input_tokens", 5}, {"output_tokens", 4}}}});

    json t = build_transcript(store, run);
    ASSERT_EQ(t.size(), 2u);
    EXPECT_EQ(t[0]["step"], "r1s0.gen");
    EXPECT_EQ(t[0]["messages"][1]["text"], "Make this fast:\n```python\nx\n```");
    EXPECT_EQ(t[0]["reply"], "Here it is.");
    EXPECT_EQ(t[0]["candidate"]["source"], "class ModelNew: pass\n");
    EXPECT_FALSE(t[1].contains("candidate"));

    const std::string md = transcript_markdown(t);
    EXPECT_NE(md.find("You write kernels."), std::string::npos);
    EXPECT_NE(md.find("class ModelNew: pass"), std::string::npos);
    EXPECT_NE(md.find("Fuse the loops."), std::string::npos);
    // The prompt's own ``` block sits inside a longer fence.
    EXPECT_NE(md.find("````\nMake this fast:"), std::string::npos) << md;
    EXPECT_LT(md.find("r1s0.gen"), md.find("r1.analysis"));
  }
  fs::remove(db);
}

}  // namespace
}  // namespace kforge::loop
