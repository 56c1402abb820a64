// The setup hint names what the layout kforge runs from has.
#include "cli/setup_hint.h"

#include <fstream>

#include <gtest/gtest.h>

#include "util/paths.h"

namespace kforge {
namespace {

namespace fs = std::filesystem;

void touch(const fs::path& p) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << "#!/bin/sh\n";
}

TEST(SetupHint, NamesWhatTheLayoutHas) {
  const fs::path root = make_temp_dir("kforge-setup-hint-");
  const fs::path venv = "/home/u/.local/share/kforge/venv";

  const fs::path tree = root / "tree";
  touch(tree / "scripts" / "setup.sh");
  EXPECT_EQ(worker_setup_hint(tree, venv),
            "run " + (tree / "scripts/setup.sh").string() + ", which makes " + (tree / ".venv").string() + " with torch");

  const fs::path installed = root / "usr" / "share" / "kforge";
  touch(installed / "setup-worker.sh");
  const std::string hint = worker_setup_hint(installed, venv);
  EXPECT_EQ(hint, "run " + (installed / "setup-worker.sh").string() + ", which makes " + venv.string() +
                      " with torch where kforge looks for it");
  EXPECT_EQ(hint.find("scripts/setup.sh"), std::string::npos);

  const fs::path bundle = root / "bundle";
  fs::create_directories(bundle / "worker");
  EXPECT_EQ(worker_setup_hint(bundle, venv), "make a Python 3.10+ environment with torch and the packages of " +
                                                 (bundle / "worker/requirements.txt").string());
  fs::remove_all(root);
}

}  // namespace
}  // namespace kforge
