#include "profile/ncu_runner.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>

#include "profile/ncu_report.h"
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

// A details page of many launches is megabytes; the export keeps all of it (an excerpt of the
// head and tail once cut a quoted field in two, and the profile failed to parse).
TEST(ExportNcu, APageOfMegabytesComesBackWhole) {
  fs::path dir = make_temp_dir("kforge-ncu-test-");
  std::ofstream(dir / "report.ncu-rep") << "report";
  {
    std::ofstream page(dir / "page.csv");
    page << "==PROF== a line before the header\n"
         << "\"ID\",\"Kernel Name\",\"Section Name\",\"Metric Name\",\"Metric Unit\",\"Metric Value\"\n";
    for (int i = 0; i < 30000; ++i)
      page << "\"" << i << "\",\"void kernel<float, 128>(float const*, float*)\",\"SpeedOfLight\",\"Duration\","
           << "\"nsecond\",\"1,234\"\n";
  }
  std::ofstream(dir / "ncu") << "#!/bin/sh\nexec cat " << (dir / "page.csv").string() << "\n";
  fs::permissions(dir / "ncu", fs::perms::owner_all);
  auto out = export_ncu_report(dir / "ncu", dir / "report.ncu-rep");
  EXPECT_EQ(out.error, "");
  EXPECT_GT(out.details.size(), 2u << 20);
  auto launches = parse_ncu_csv(out.details);
  ASSERT_EQ(launches.size(), 30000u);
  EXPECT_EQ(launches.back().id, "29999");
  EXPECT_EQ(launches.back().number("Duration"), 1234.0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kforge::profile
