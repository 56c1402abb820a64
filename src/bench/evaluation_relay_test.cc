// Both ends of a relayed run (bench/relayed_evaluations.h, bench/evaluation_relay.h) over real
// pipes, with an executor that answers from the request instead of a Ray cluster.
#include "bench/evaluation_relay.h"

#include <sys/select.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "bench/relayed_evaluations.h"

namespace kforge::bench {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Answers by what the candidate's source says: "fail" is refused, "lose" loses the executor.
class ScriptedExecutor : public Executor {
 public:
  ExecutedEval evaluate(const EvalOptions&, bool) override { throw std::logic_error("not used"); }
  bool relays_runs() const override { return true; }
  ExecutedRequest run_request(const json& request) override {
    const std::string source = request["candidate"]["source"];
    if (source == "fail") throw std::runtime_error("node n/1 refuses to evaluate: no sandbox");
    if (source == "lose") throw ExecutorLost("the Ray bridge ended");
    if (request.value("kind", "") == "pair") {
      loop::PairMeasurement m;
      m.complete = true;
      m.vs_best = {2.0, 1.8, 2.2, 0.95, 5, "paired bootstrap"};
      m.detail = {{"challenger", request["challenger"]["file"]}};
      return {loop::pair_measurement_to_json(m), "node-b/87654321"};
    }
    return {json{{"status", "correct"}, {"file", request["candidate"]["file"]}, {"timing", request["timing"]}},
            "node-a/12345678"};
  }
};

class RelayTest : public ::testing::Test {
 protected:
  void SetUp() override {
    signal(SIGPIPE, SIG_IGN);  // as kforge does
    dir_ = fs::temp_directory_path() / ("kforge-relay-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    for (const char* name : {"problem.py", "good.py", "fail.py", "lose.py", "other.py"})
      std::ofstream(dir_ / name) << fs::path(name).stem().string();
    ASSERT_EQ(pipe(requests_), 0);
    ASSERT_EQ(pipe(answers_), 0);
    run_ = std::make_unique<RelayedEvaluations>(answers_[0], requests_[1]);
    bench_ = std::thread([this] { serve(); });
  }
  void TearDown() override {
    stop_ = true;
    bench_.join();
    run_.reset();
    for (int fd : {requests_[0], requests_[1], answers_[0], answers_[1]}) close(fd);
    fs::remove_all(dir_);
  }

  // The bench's loop: requests in, answers out, as bench_runner.cc runs it.
  void serve() {
    EvaluationRelay relay(executor_);
    std::string buffer;
    char chunk[4096];
    while (!stop_) {
      relay.deliver([this](const std::string& line) {
        std::string l = line + "\n";
        return !close_answers_ && write(answers_[1], l.data(), l.size()) == static_cast<ssize_t>(l.size());
      });
      fd_set in;
      FD_ZERO(&in);
      FD_SET(requests_[0], &in);
      timeval wait{0, 20000};
      if (select(requests_[0] + 1, &in, nullptr, nullptr, &wait) <= 0) continue;
      ssize_t n = read(requests_[0], chunk, sizeof chunk);
      if (n <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(n));
      for (std::size_t end; (end = buffer.find('\n')) != std::string::npos; buffer.erase(0, end + 1))
        relay.handle(buffer.substr(0, end));
    }
  }

  EvalOptions options(const char* candidate, bool timing) {
    EvalOptions o;
    o.problem = dir_ / "problem.py";
    o.candidate = dir_ / candidate;
    o.timing = timing;
    return o;
  }

  fs::path dir_;
  int requests_[2]{-1, -1}, answers_[2]{-1, -1};
  ScriptedExecutor executor_;
  std::unique_ptr<RelayedEvaluations> run_;
  std::thread bench_;
  std::atomic<bool> stop_{false}, close_answers_{false};
};

TEST_F(RelayTest, EvaluationsAndPairsComeBackFromTheExecutorEvenWhenSeveralAreInFlight) {
  std::vector<std::thread> samples;
  std::vector<json> docs(4);
  for (int i = 0; i < 4; ++i)
    samples.emplace_back([&, i] { docs[i] = run_->evaluate(options(i % 2 ? "good.py" : "other.py", i < 2), nullptr, nullptr).doc; });
  for (auto& t : samples) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(docs[i]["status"], "correct");
    EXPECT_EQ(docs[i]["file"], i % 2 ? "good.py" : "other.py");
    EXPECT_EQ(docs[i]["timing"], i < 2);
  }
  loop::PairMeasurement m = run_->measure_pair(options("good.py", true), dir_ / "good.py", dir_ / "other.py", nullptr, nullptr);
  EXPECT_TRUE(m.complete);
  EXPECT_DOUBLE_EQ(m.vs_best.point, 2.0);
  EXPECT_TRUE(m.vs_best.faster());
  EXPECT_EQ(m.detail["challenger"], "other.py");
}

TEST_F(RelayTest, ARefusedRequestFailsTheEvaluationAndALostExecutorStopsTheRun) {
  try {
    run_->evaluate(options("fail.py", false), nullptr, nullptr);
    FAIL() << "a refused request came back as a result";
  } catch (const loop::EvaluationFailed& e) {
    EXPECT_NE(std::string(e.what()).find("refuses to evaluate"), std::string::npos);
  }
  EXPECT_THROW(run_->evaluate(options("lose.py", false), nullptr, nullptr), loop::EvaluationsLost);
  EXPECT_THROW(run_->profile({}, nullptr, nullptr), std::runtime_error);  // never on this host
}

TEST_F(RelayTest, TheBenchGoingAwayLosesWhatIsInFlight) {
  close_answers_ = true;  // the bench takes requests but never answers again...
  std::thread waiting([&] { EXPECT_THROW(run_->evaluate(options("good.py", false), nullptr, nullptr), loop::EvaluationsLost); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  close(answers_[1]);  // ...and then is gone
  answers_[1] = -1;
  waiting.join();
  EXPECT_THROW(run_->evaluate(options("good.py", false), nullptr, nullptr), loop::EvaluationsLost);
}

}  // namespace
}  // namespace kforge::bench
