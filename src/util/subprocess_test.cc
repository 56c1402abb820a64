#include "util/subprocess.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "util/environment.h"

namespace kforge {
namespace {

using namespace std::chrono_literals;

SpawnOptions shell(const std::string& script) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", script};
  o.env = {{"PATH", "/usr/bin:/bin"}};
  return o;
}

auto soon(std::chrono::milliseconds ms) { return std::chrono::steady_clock::now() + ms; }

TEST(Subprocess, RepliesComeOnFd3AndStdoutGoesToTheLog) {
  auto p = Subprocess::spawn(shell("read line; echo printed; echo \"got $line\" >&3"));
  ASSERT_TRUE(p->send_line("hello"));
  std::string line;
  ASSERT_EQ(p->wait_line(soon(5000ms), &line), WaitOutcome::kReply);
  EXPECT_EQ(line, "got hello");
  p->finish(1000ms);
  EXPECT_NE(p->log_excerpt().find("printed"), std::string::npos);
}

TEST(Subprocess, LogToSendsLaterOutputToTheNewFileOnly) {
  auto dir = std::filesystem::temp_directory_path() / ("kforge-logto-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  SpawnOptions o = shell("echo first; echo a >&3; read line; echo second; echo b >&3");
  o.log_file = dir / "one.log";
  auto p = Subprocess::spawn(o);
  std::string line;
  ASSERT_EQ(p->wait_line(soon(5000ms), &line), WaitOutcome::kReply);
  std::this_thread::sleep_for(100ms);  // let "first" reach the log pipe before the switch
  p->log_to(dir / "two.log");
  ASSERT_TRUE(p->send_line("go"));
  ASSERT_EQ(p->wait_line(soon(5000ms), &line), WaitOutcome::kReply);
  p->finish(1000ms);
  auto read = [](const std::filesystem::path& f) {
    std::ifstream in(f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(read(dir / "one.log"), "first\n");
  EXPECT_EQ(read(dir / "two.log"), "second\n");
  EXPECT_EQ(p->log_excerpt().find("first"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Subprocess, AReplyThatCameInTimeIsReadAfterTheDeadlinePassed) {
  // A request sent ahead (a new worker's "warm") is read when kforge needs the worker, which can be
  // after its deadline: the reply already in the pipe is the answer, not a timeout.
  auto p = Subprocess::spawn(shell("echo ready >&3; sleep 30"));
  const auto deadline = soon(300ms);
  std::this_thread::sleep_for(600ms);
  std::string line;
  EXPECT_EQ(p->wait_line(deadline, &line), WaitOutcome::kReply);
  EXPECT_EQ(line, "ready");
  EXPECT_EQ(p->wait_line(soon(100ms), &line), WaitOutcome::kTimeout);  // nothing more came
  p->kill_tree();
}

TEST(Subprocess, TimeoutIsBoundedAndTheChildIsKilled) {
  auto p = Subprocess::spawn(shell("sleep 30"));
  pid_t pid = p->pid();
  auto start = std::chrono::steady_clock::now();
  std::string line;
  EXPECT_EQ(p->wait_line(soon(300ms), &line), WaitOutcome::kTimeout);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 2s);
  p->kill_tree();
  EXPECT_NE(kill(pid, 0), 0);
}

TEST(Subprocess, ExitIsReportedWithItsStatus) {
  auto p = Subprocess::spawn(shell("exit 7"));
  std::string line;
  EXPECT_EQ(p->wait_line(soon(5000ms), &line), WaitOutcome::kExited);
  EXPECT_EQ(p->exit_status().code, 7);
}

TEST(Subprocess, SegfaultIsReportedAsASignal) {
  auto p = Subprocess::spawn(shell("kill -SEGV $$"));
  std::string line;
  EXPECT_EQ(p->wait_line(soon(5000ms), &line), WaitOutcome::kExited);
  EXPECT_EQ(p->exit_status().signal, SIGSEGV);
  EXPECT_NE(p->exit_status().describe().find("signal 11"), std::string::npos);
}

TEST(Subprocess, ASignalReportedThroughAShellIsTheTerminatingSignal) {
  ExitStatus through{true, 128 + SIGKILL, 0};  // a sandbox or shell in between: exit code 128 + N
  EXPECT_EQ(through.terminating_signal(), SIGKILL);
  EXPECT_NE(through.describe().find("killed by signal 9"), std::string::npos);
  EXPECT_EQ((ExitStatus{true, 7, 0}).terminating_signal(), 0);
  EXPECT_EQ((ExitStatus{true, -1, SIGSEGV}).terminating_signal(), SIGSEGV);
}

TEST(Subprocess, OutputFloodIsDetected) {
  SpawnOptions o = shell("yes xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
  o.log_cap_bytes = 1 << 20;
  auto p = Subprocess::spawn(o);
  std::string line;
  EXPECT_EQ(p->wait_line(soon(10000ms), &line), WaitOutcome::kOutputFlood);
  p->kill_tree();
  EXPECT_GT(p->log_bytes(), 1u << 20);
}

TEST(Subprocess, DetachedGrandchildIsKilledWithTheTree) {
  become_subreaper();
  // The grandchild leaves the process group with setsid and writes its pid before sleeping.
  char dir_template[] = "/tmp/kforge-test-XXXXXX";
  std::string dir = mkdtemp(dir_template);
  std::string pidfile = dir + "/pid";
  auto p = Subprocess::spawn(shell("setsid sh -c 'echo $$ > " + pidfile + "; sleep 60' & sleep 60"));
  pid_t grandchild = 0;
  for (int i = 0; i < 200 && grandchild == 0; ++i) {
    std::this_thread::sleep_for(10ms);
    std::ifstream(pidfile) >> grandchild;
  }
  ASSERT_GT(grandchild, 0);
  p->kill_tree();
  std::this_thread::sleep_for(50ms);
  EXPECT_NE(kill(grandchild, 0), 0) << "the setsid grandchild survived";
}

TEST(Subprocess, KillingATreeSparesKforgesOtherChildren) {
  become_subreaper();
  pid_t other = fork();  // e.g. an LLM provider's command, started outside any worker tree
  if (other == 0) {
    execl("/bin/sleep", "sleep", "30", nullptr);
    _exit(127);
  }
  auto p = Subprocess::spawn(shell("sleep 30"));
  p->kill_tree();
  EXPECT_EQ(kill(other, 0), 0) << "an unrelated child was killed";
  kill(other, SIGKILL);
  waitpid(other, nullptr, 0);
}

// Children of this process that have exited and were never waited for.
int zombie_children() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;  // not a process
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    auto close = stat.rfind(')');
    char state = 0;
    long ppid = 0;
    if (close != std::string::npos && std::sscanf(stat.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 &&
        ppid == getpid() && state == 'Z')
      ++n;
  }
  return n;
}

TEST(Subprocess, ManyKilledTreesLeaveNoZombies) {
  // Like a long bench retiring worker after worker: each tree has processes in its group below the
  // worker (a compiler, a pool of helpers), killed with it and re-parented to kforge, the subreaper.
  become_subreaper();
  const int before = zombie_children();
  for (int i = 0; i < 10; ++i) {
    auto p = Subprocess::spawn(shell("sleep 60 & sleep 60 & echo started >&3; wait"));
    std::string line;
    ASSERT_EQ(p->wait_line(soon(10000ms), &line), WaitOutcome::kReply);
    p->kill_tree();
  }
  EXPECT_EQ(zombie_children() - before, 0);
}

TEST(RunCommand, CapturesOutputAndExitCode) {
  auto r = run_command({"/bin/sh", "-c", "echo hi; exit 3"}, 5s);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "hi\n");
}

TEST(Environment, SecretLookingNamesAreRecognised) {
  EXPECT_TRUE(looks_secret("OPENAI_API_KEY"));
  EXPECT_TRUE(looks_secret("github_token"));
  EXPECT_TRUE(looks_secret("DB_PASSWORD"));
  EXPECT_FALSE(looks_secret("PATH"));
  EXPECT_FALSE(looks_secret("OMP_NUM_THREADS"));
}

}  // namespace
}  // namespace kforge
