// A target platform, read from targets/<name>/target.toml. Targets are data: adding a platform
// means adding a folder, never changing C++ (see docs/targets.md for the keys).
#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kforge {

// [requires]: what a target needs to run here, checked by `kforge targets` (target/readiness.h).
struct Requirements {
  std::vector<std::string> python;        // modules the worker's Python must find
  std::vector<std::string> commands;      // programs that must be on PATH
  std::vector<std::string> files;         // globs; each must match at least one path (drivers, libraries)
  std::vector<std::string> device_nodes;  // globs; none matching means the hardware is absent
  std::string hardware;                   // what the device nodes stand for, e.g. "an NVIDIA GPU"
  // One line added to the readiness reason wherever the target is not runnable: what it takes that
  // kforge does not install, and why (e.g. a toolchain too large for the default environment).
  std::string note;
};

// [compile_only]: what `kforge eval --compile-only` does, where the hardware may be absent.
enum class CompileOnlyMode {
  kNone,         // not offered: --compile-only is refused
  kBuild,        // the candidate's kernels are built, nothing runs (status compiled / compile_error)
  kInterpreter,  // both workers run on the CPU with `env` set (a kernel-language interpreter), untimed
};
struct CompileOnlySpec {
  CompileOnlyMode mode = CompileOnlyMode::kNone;
  std::map<std::string, std::string> env;  // interpreter mode: variables that turn the interpreter on
};
// "none", "build" or "interpreter": the spelling in target.toml and in an EvalResult's compile_only.
const char* compile_only_mode_name(CompileOnlyMode mode);

// The device-node globs a target's [sandbox] devices may name: a candidate sees only device nodes of
// GPU drivers, never disks, terminals or memory.
extern const char* const kSandboxDevicePatterns[];

// [device_lock]: whether an evaluation holds its device alone while timing (docs/gpu.md).
struct DeviceLockSpec {
  bool exclusive = false;           // one timed measurement per physical device at a time
  std::string visible_devices_env;  // variable that renumbers devices (CUDA_VISIBLE_DEVICES): the lock
                                    // names the physical device it maps an index to
};

struct Target {
  std::string name;
  std::string description;
  std::string language;      // kernel source language: cpp, opencl, cuda, triton, ...
  std::string device;        // device kind the worker runs on: cpu or cuda
  double compile_timeout_s = 300;
  std::filesystem::path dir;
  std::filesystem::path example_reference;
  std::filesystem::path example_candidate;
  std::filesystem::path notes;
  double address_space_gb = 0;  // RLIMIT_AS for the candidate; 0 = none
  std::vector<std::string> sandbox_devices;  // [sandbox] devices: globs from kSandboxDevicePatterns
  std::vector<std::string> env_pass;
  std::map<std::string, std::string> env_set;
  std::vector<std::string> allowed_torch_calls;  // [checks] allowed_torch_calls
  // [checks] kernel_loops: functions whose for-loops are device code (Helion's hl.tile): PyTorch calls
  // in their bodies are the kernel language, not library calls.
  std::vector<std::string> kernel_loops;
  // [checks] kernel_modules: the Python packages of the target's kernel toolchain (e.g. its DSL). What
  // they do while the candidate runs is building (runtime checks), what they return is a compiled
  // kernel, and a candidate may not reassign their attributes (static checks).
  std::vector<std::string> kernel_modules;
  std::vector<std::string> preload;  // [worker] preload: Python modules a worker imports while it waits for work
  Requirements requirements;  // [requires]
  CompileOnlySpec compile_only;
  // [caches]: variable -> folder relative to kforge's cache directory. The reference fills the shared
  // folder; a candidate gets a private, empty one of the same name (it never writes a shared cache).
  std::map<std::string, std::string> caches;
  DeviceLockSpec device_lock;
};

// Reads one target folder; throws InputError naming the file and key on a bad or missing value.
Target load_target(const std::filesystem::path& dir);

class TargetRegistry {
 public:
  // Every folder under `targets_dir` that holds a target.toml.
  static TargetRegistry load(const std::filesystem::path& targets_dir);

  const std::vector<Target>& all() const { return targets_; }
  const Target* find(const std::string& name) const;
  // find() or an InputError listing the known targets.
  const Target& get(const std::string& name) const;

 private:
  std::vector<Target> targets_;
};

}  // namespace kforge
