// Test helper: a fake worker that is a shell loop, for tests of how kforge reads workers' replies.
#pragma once

#include <memory>
#include <string>

#include "eval/worker_client.h"
#include "util/subprocess.h"

namespace kforge {

// A worker that reads requests and answers each with `answer`: shell code that sees the request's
// $id and $cmd and writes its reply to fd 3.
inline std::unique_ptr<WorkerClient> shell_worker(const std::string& role, const std::string& answer) {
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", R"sh(
while read line; do
  id=$(echo "$line" | sed 's/.*"id":\([0-9]*\).*/\1/')
  cmd=$(echo "$line" | sed 's/.*"cmd":"\([a-z_]*\)".*/\1/')
  )sh" + answer + R"sh(
done)sh"};
  o.env = {{"PATH", "/usr/bin:/bin"}};
  return std::make_unique<WorkerClient>(role, Subprocess::spawn(o));
}

}  // namespace kforge
