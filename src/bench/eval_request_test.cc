#include "bench/eval_request.h"

#include <unistd.h>

#include <fstream>

#include <gtest/gtest.h>

#include "util/errors.h"
#include "util/files.h"

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;

class EvalRequestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kforge-eval-request-test-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "in");
    std::ofstream(dir_ / "in" / "01_relu.py") << "# problem\n";
    std::ofstream(dir_ / "in" / "cand.py") << "# candidate\n";
    registry_ = TargetRegistry::load(fs::path(KFORGE_SOURCE_DIR) / "targets");
  }
  void TearDown() override { fs::remove_all(dir_); }

  EvalOptions options() {
    EvalOptions o;
    o.problem = dir_ / "in" / "01_relu.py";
    o.candidate = dir_ / "in" / "cand.py";
    o.target = registry_.get("cpu");
    o.overrides = {{"batch_size", "16"}};
    o.trials = 2;
    o.reps = 7;
    o.timing = false;
    o.seed = 11;
    o.python = "/usr/bin/python3";
    o.precision = "relaxed";
    o.config_path = dir_ / "kforge.toml";  // stays behind
    return o;
  }

  fs::path dir_;
  TargetRegistry registry_;
};

TEST_F(EvalRequestTest, CarriesSourcesAndSettingsButNotTheConfig) {
  nlohmann::json r = make_eval_request(options());
  EXPECT_EQ(r["problem"]["file"], "01_relu.py");
  EXPECT_EQ(r["candidate"]["source"], "# candidate\n");
  EXPECT_EQ(r.dump().find("kforge.toml"), std::string::npos);

  EvalOptions back = eval_options_from_request(r, registry_, dir_ / "node");
  EXPECT_EQ(back.problem, dir_ / "node" / "problem" / "01_relu.py");
  EXPECT_EQ(read_file(back.problem), "# problem\n");
  EXPECT_EQ(read_file(back.candidate), "# candidate\n");
  EXPECT_NE(back.problem.parent_path(), back.candidate.parent_path());
  EXPECT_EQ(back.target.name, "cpu");
  EXPECT_EQ(back.overrides, options().overrides);
  EXPECT_EQ(back.trials, 2);
  EXPECT_EQ(back.reps, 7);
  EXPECT_FALSE(back.timing);
  EXPECT_EQ(back.seed, 11u);
  EXPECT_EQ(back.python, "/usr/bin/python3");
  EXPECT_EQ(back.precision, "relaxed");
  EXPECT_TRUE(back.sandbox);
  EXPECT_FALSE(back.config_path);
  EXPECT_EQ(back.log_dir, dir_ / "node" / "logs");
}

TEST_F(EvalRequestTest, AProblemsWeightsTravelBesideIt) {
  EXPECT_TRUE(make_eval_request(options())["problem"]["data"].empty());
  std::string weights;
  for (int i = 0; i < 1000; ++i) weights.push_back(static_cast<char>(i * 37 % 256));  // binary, with NULs
  for (std::size_t n : {weights.size(), weights.size() - 1, weights.size() - 2}) {  // each base64 padding
    std::ofstream(dir_ / "in" / "01_relu.pt", std::ios::binary) << weights.substr(0, n);
    nlohmann::json r = make_eval_request(options());
    ASSERT_EQ(r["problem"]["data"].size(), 1u);
    EXPECT_EQ(r["problem"]["data"][0]["file"], "01_relu.pt");
    EXPECT_NO_THROW((void)r.dump());  // valid JSON text
    fs::remove_all(dir_ / "node");
    EvalOptions back = eval_options_from_request(r, registry_, dir_ / "node");
    EXPECT_EQ(read_file(dir_ / "node" / "problem" / "01_relu.pt"), weights.substr(0, n));
  }
  nlohmann::json bad = make_eval_request(options());
  bad["problem"]["data"][0]["file"] = "../escape.pt";
  EXPECT_THROW(eval_options_from_request(bad, registry_, dir_ / "node"), InputError);
  bad["problem"]["data"][0] = {{"file", "01_relu.pt"}, {"base64", "not*base64"}};
  EXPECT_THROW(eval_options_from_request(bad, registry_, dir_ / "node"), InputError);
}

TEST_F(EvalRequestTest, RejectsFileNamesThatLeaveTheFolderAndMalformedRequests) {
  nlohmann::json r = make_eval_request(options());
  for (const char* bad : {"../escape.py", "", "..", "a/b.py"}) {
    nlohmann::json forged = r;
    forged["candidate"]["file"] = bad;
    EXPECT_THROW(eval_options_from_request(forged, registry_, dir_ / "node"), InputError) << bad;
  }
  nlohmann::json missing = r;
  missing.erase("trials");
  EXPECT_THROW(eval_options_from_request(missing, registry_, dir_ / "node"), InputError);
  nlohmann::json newer = r;
  newer["version"] = kEvalRequestVersion + 1;
  EXPECT_THROW(eval_options_from_request(newer, registry_, dir_ / "node"), InputError);
  nlohmann::json unknown = r;
  unknown["target"] = "tpu";
  EXPECT_THROW(eval_options_from_request(unknown, registry_, dir_ / "node"), InputError);
}

TEST_F(EvalRequestTest, APairCarriesTheBestAndTheChallengerEachInAFolderOfItsOwn) {
  std::ofstream(dir_ / "in" / "r1.s0.a0.py") << "# challenger\n";
  EvalOptions o = options();
  nlohmann::json r = make_pair_request(o, o.candidate, dir_ / "in" / "r1.s0.a0.py");
  EXPECT_TRUE(is_pair_request(r));
  EXPECT_FALSE(is_pair_request(make_eval_request(o)));
  EXPECT_TRUE(r["timing"].get<bool>());  // a pair is a timing: it holds a whole device
  EvalOptions back = eval_options_from_request(r, registry_, dir_ / "node");
  fs::path challenger = challenger_from_request(r, dir_ / "node");
  EXPECT_EQ(read_file(back.candidate), "# candidate\n");
  EXPECT_EQ(read_file(challenger), "# challenger\n");
  EXPECT_NE(challenger.parent_path(), back.candidate.parent_path());
  EXPECT_THROW(challenger_from_request(make_eval_request(o), dir_ / "node"), InputError);
  nlohmann::json forged = r;
  forged["challenger"]["file"] = "../escape.py";
  EXPECT_THROW(challenger_from_request(forged, dir_ / "node"), InputError);
  nlohmann::json unknown = r;
  unknown["kind"] = "profile";
  EXPECT_THROW(eval_options_from_request(unknown, registry_, dir_ / "node"), InputError);
}

}  // namespace
}  // namespace kforge::bench
