#include "eval/candidate_replies.h"

#include <gtest/gtest.h>

namespace kforge {
namespace {

using json = nlohmann::json;

json reply(const std::string& cmd, json fields, std::uint64_t id = 7) {
  fields["id"] = id;
  fields["cmd"] = cmd;
  if (!fields.contains("ok")) fields["ok"] = true;
  return fields;
}

json block(json times) {
  return {{"times_ms", std::move(times)}, {"events", json::array()}, {"tampered", json::array()},
          {"inputs_changed", json::array()}, {"inputs_changed_count", 0}, {"new_output_types", json::array()},
          {"untimed_ms", 0.5}};
}

TEST(CandidateReplies, AWellFormedReplyPasses) {
  EXPECT_FALSE(candidate_reply_problem("time", {{"reps", 2}}, 7, reply("time", block({0.1, 0.2}))));
  EXPECT_FALSE(candidate_reply_problem("run", {}, 7, reply("run", {{"seconds", 0.01}})));
  EXPECT_FALSE(candidate_reply_problem(
      "load_candidate", {}, 7,
      reply("load_candidate", {{"import_facts", {{"events", json::array({json::array({"open", "x"})})},
                                                 {"tampered", json::array()}, {"precision_flags", json::object()}}}})));
  EXPECT_FALSE(candidate_reply_problem(
      "run", {}, 7, reply("run", {{"ok", false}, {"error", {{"kind", "runtime_error"}, {"message", "boom"}}}})));
  EXPECT_FALSE(candidate_reply_problem("profile", {}, 7, reply("profile", {{"anything", 1}})));
}

TEST(CandidateReplies, AReplyToAnotherRequestIsNotTheReply) {
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, reply("run", {{"seconds", 0.01}}, 8)));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, json{{"cmd", "run"}, {"ok", true}, {"seconds", 1}}));
  EXPECT_TRUE(candidate_reply_problem("time", {{"reps", 1}}, 7, reply("run", {{"seconds", 0.01}})));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, json{{"id", 7}, {"ok", true}, {"seconds", 1}}));  // no cmd
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, json::array({7})));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, json{{"id", "7"}, {"cmd", "run"}, {"ok", true}, {"seconds", 1}}));
}

TEST(CandidateReplies, WrongTypesAreNamed) {
  auto problem = candidate_reply_problem("time", {{"reps", 2}}, 7, reply("time", block({"fast", "fast"})));
  ASSERT_TRUE(problem);
  EXPECT_NE(problem->find("times_ms"), std::string::npos) << *problem;
  EXPECT_TRUE(candidate_reply_problem("time", {{"reps", 2}}, 7, reply("time", block({0.1}))));        // too few
  EXPECT_TRUE(candidate_reply_problem("time", {{"reps", 1}}, 7, reply("time", block({-1.0}))));       // negative
  EXPECT_TRUE(candidate_reply_problem("time", {{"reps", 1}}, 7, reply("time", block({"nan"}))));      // NaN travels as a string
  EXPECT_TRUE(candidate_reply_problem("time", {{"reps", 1}}, 7, reply("time", block("0.1"))));
  json bad_events = block({0.1});
  bad_events["events"] = json::array({"open"});
  EXPECT_TRUE(candidate_reply_problem("time", {{"reps", 1}}, 7, reply("time", bad_events)));
  json bad_untimed = block({0.1});
  bad_untimed["untimed_ms"] = "lots";
  EXPECT_TRUE(candidate_reply_problem("time", {{"reps", 1}}, 7, reply("time", bad_untimed)));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, reply("run", {{"seconds", "quick"}})));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, reply("run", {})));
  EXPECT_TRUE(candidate_reply_problem("load_candidate", {}, 7, reply("load_candidate", {{"import_facts", "clean"}})));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, reply("run", {{"ok", "yes"}, {"seconds", 1}})));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7, reply("run", {{"ok", false}, {"error", "device_oom"}})));
  EXPECT_TRUE(candidate_reply_problem("run", {}, 7,
                                      reply("run", {{"ok", false}, {"error", {{"kind", 3}, {"message", "m"}}}})));
}

}  // namespace
}  // namespace kforge
