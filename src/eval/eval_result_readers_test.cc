// EvalResults are read through their one decoder (eval/eval_view.h), so a renamed field changes in
// one place and a wrong type fails there, with the field's name. This test reads the sources:
//   - the files that read EvalResults and nothing else read no JSON key themselves;
//   - outside src/eval/ (the evaluator that writes the document, and the decoder), no EvalResult
//     object's document (`result.doc`, a stored evaluation's `.result`) is read by key, and neither is
//     an EvalResult held as JSON by the files that also read other documents (the loop, the
//     profile's anchoring, the store): they name it `eval` (`a.eval`, `best_->eval`) or
//     `evaluation`, and pass it to the decoder or to functions of src/eval that read it through
//     the decoder.
// Other JSON (configuration, LLM replies, the run's decisions, bench outcomes) is not an EvalResult
// and is not concerned.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace {

namespace fs = std::filesystem;

const fs::path kSource = fs::path(KFORGE_SOURCE_DIR) / "src";

// The readers of EvalResults: everything they know of the document comes from the decoder.
const std::vector<std::string> kDecodedReaders = {
    "agent/feedback.cc",          // what the generation agent is told about a failed evaluation
    "bench/outcome.cc",           // a bench problem's outcome from its evaluation
    "eval/eval_result.cc",        // the terminal summary, timing spread, exit code
    "eval/speed_claim.cc",        // the speed claim every report makes
    "loop/measurement_check.cc",  // the flags that keep a measurement from being trusted
    "loop/pair_timing.cc",        // why a head-to-head of two candidates failed
};

const std::regex kKeyRead(R"(\.(value|contains|at)\s*\()");
// `result.doc.value(...)`, `r.doc["error"].value(...)`, `e.result.contains(...)`, ...
const std::regex kDocKeyRead(R"(\.(doc|result)(\[[^\]]*\])*\.(value|contains|at)\s*\()");
// `a.eval.value(...)`, `best_->eval["sol"]`, `evaluation.contains(...)`: an EvalResult as JSON.
const std::regex kEvalKeyRead(R"(\b(eval|evaluation)\s*(\[|\.(value|contains|at)\s*\())");

std::vector<std::string> matching_lines(const fs::path& path, const std::regex& pattern) {
  std::ifstream in(path);
  std::vector<std::string> found;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    const std::string code = line.substr(0, line.find("//"));
    if (std::regex_search(code, pattern))
      found.push_back(fs::relative(path, kSource).string() + ":" + std::to_string(number) + ": " + line);
  }
  return found;
}

std::string joined(const std::vector<std::string>& lines) {
  std::ostringstream out;
  for (const auto& l : lines) out << "\n  " << l;
  return out.str();
}

TEST(EvalResultReaders, TheReadersReadNoKeyOfTheirOwn) {
  std::vector<std::string> found;
  for (const auto& file : kDecodedReaders) {
    ASSERT_TRUE(fs::is_regular_file(kSource / file)) << file;
    for (auto& l : matching_lines(kSource / file, kKeyRead)) found.push_back(l);
  }
  EXPECT_TRUE(found.empty()) << "EvalResult fields read by key outside the decoder (add them to eval/eval_view.h):"
                             << joined(found);
}

TEST(EvalResultReaders, NoEvalResultIsReadByKeyOutsideTheEvaluator) {
  std::vector<std::string> found;
  for (const auto& entry : fs::recursive_directory_iterator(kSource)) {
    const fs::path& path = entry.path();
    if (!entry.is_regular_file() || (path.extension() != ".cc" && path.extension() != ".h")) continue;
    if (path.filename().string().ends_with("_test.cc") || fs::relative(path, kSource).begin()->string() == "eval")
      continue;
    for (auto& l : matching_lines(path, kDocKeyRead)) found.push_back(l);
    for (auto& l : matching_lines(path, kEvalKeyRead)) found.push_back(l);
  }
  EXPECT_TRUE(found.empty()) << "EvalResults read by key outside the decoder (read them through eval/eval_view.h):"
                             << joined(found);
}

// The patterns find what they are meant to find: a test that cannot fail proves nothing.
TEST(EvalResultReaders, ThePatternsCatchKeyReads) {
  EXPECT_TRUE(std::regex_search("  std::string m = result.doc.value(\"error\", json());", kDocKeyRead));
  EXPECT_TRUE(std::regex_search("r.doc[\"error\"].value(\"message\", \"\")", kDocKeyRead));
  EXPECT_TRUE(std::regex_search("if (e.result.contains(\"timing\"))", kDocKeyRead));
  EXPECT_FALSE(std::regex_search("result.doc[\"store\"] = {{\"path\", p}};", kDocKeyRead));  // a write
  EXPECT_TRUE(std::regex_search("ctx[\"timing\"] = eval.value(\"timing\", json::object());", kEvalKeyRead));
  EXPECT_TRUE(std::regex_search("detail[\"library_calls\"] = a.eval[\"library_calls\"];", kEvalKeyRead));
  EXPECT_TRUE(std::regex_search("if (best_->eval.contains(\"sol\"))", kEvalKeyRead));
  EXPECT_TRUE(std::regex_search("const json sol = evaluation.value(\"sol\", json());", kEvalKeyRead));
  EXPECT_FALSE(std::regex_search("p.eval.candidate = ctx_.work_dir / \"best.py\";", kEvalKeyRead));  // options
  EXPECT_FALSE(std::regex_search("ask(*w.cand, \"run\", args, opt_.eval.timeout_s);", kEvalKeyRead));
  EXPECT_FALSE(std::regex_search("row.value(\"eval_step\", \"\")", kEvalKeyRead));
  EXPECT_TRUE(std::regex_search("doc.value(\"status\", \"\")", kKeyRead));
  EXPECT_FALSE(std::regex_search("const EvalView v = EvalView::decode(doc);", kKeyRead));
}

}  // namespace
