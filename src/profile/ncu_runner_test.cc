#include "profile/ncu_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "util/paths.h"

namespace kforge::profile {
namespace {

namespace fs = std::filesystem;

// Sets PATH (and clears NCU) for one test, restoring both after.
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& path) {
    if (const char* p = getenv("PATH")) old_path_ = p;
    if (const char* n = getenv("NCU")) old_ncu_ = n;
    setenv("PATH", path.c_str(), 1);
    unsetenv("NCU");
  }
  ~ScopedPath() {
    setenv("PATH", old_path_.c_str(), 1);
    if (!old_ncu_.empty()) setenv("NCU", old_ncu_.c_str(), 1);
  }

 private:
  std::string old_path_, old_ncu_;
};

TEST(FindNcu, OnPathExplicitOffAndMissing) {
  fs::path dir = make_temp_dir("kforge-ncu-test-");
  std::ofstream(dir / "ncu") << "#!/bin/sh\n";
  fs::permissions(dir / "ncu", fs::perms::owner_all);
  {
    ScopedPath path(dir.string());
    EXPECT_EQ(find_ncu(""), dir / "ncu");
    EXPECT_FALSE(find_ncu("off").has_value());
    EXPECT_FALSE(find_ncu((dir / "missing").string()).has_value());
  }
  fs::remove_all(dir);
}

TEST(FindNcu, MissingNotesSayWhatToDo) {
  EXPECT_NE(ncu_missing_note("").find("give it with --ncu PATH"), std::string::npos);
  EXPECT_EQ(ncu_missing_note("off"), "Nsight Compute not run (--ncu off)");
  EXPECT_EQ(ncu_missing_note("/x/ncu"), "Nsight Compute not found at /x/ncu");
}

TEST(NcuWrapper, ProfilesRangesWithClocksAsTheyAre) {
  auto argv = ncu_wrapper("/opt/ncu", "/tmp/r.ncu-rep");
  const std::string joined = [&] {
    std::string s;
    for (const auto& a : argv) s += a + " ";
    return s;
  }();
  EXPECT_EQ(argv[0], "/opt/ncu");
  EXPECT_NE(joined.find("--clock-control none"), std::string::npos);
  EXPECT_NE(joined.find("--profile-from-start off"), std::string::npos);
  EXPECT_NE(joined.find("--export /tmp/r.ncu-rep"), std::string::npos);
  EXPECT_NE(joined.find("--section SpeedOfLight"), std::string::npos);
  EXPECT_NE(joined.find("--section WarpStateStats"), std::string::npos);
}

TEST(DiagnoseNcu, PermissionAndErrorsAreNamed) {
  EXPECT_NE(diagnose_ncu_output("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission").find("no permission"),
            std::string::npos);
  EXPECT_EQ(diagnose_ncu_output("x\n==ERROR== Failed to connect to process\ny"), "ncu: ==ERROR== Failed to connect to process");
  EXPECT_EQ(diagnose_ncu_output("all fine"), "");
}

TEST(ExportNcu, MissingReportIsAnError) {
  auto out = export_ncu_report("/bin/false", "/nonexistent/report.ncu-rep");
  EXPECT_NE(out.error.find("no report was written"), std::string::npos);
}

}  // namespace
}  // namespace kforge::profile
