// Running scripts/plot.py from the binary.
#include "plot_run.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

extern char** environ;

namespace linear_ard::cli {

namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string plot_script() {
  if (const char* v = std::getenv("LINEAR_ARD_PLOT_SCRIPT"); v && *v) return v;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "linear-ard" / "plot.py";
    if (fs::exists(installed)) return installed.string();
  }
  return std::string(LINEAR_ARD_SOURCE_DIR) + "/scripts/plot.py";
}

std::string plot_python() {
  const std::string configured = LINEAR_ARD_CONFIGURED_PYTHON;
  return env_or("LINEAR_ARD_PYTHON", !configured.empty() && fs::exists(configured) ? configured : "python3");
}

}  // namespace

void plot_run(const std::vector<std::string>& args, bool quiet) {
  if (env_or("LINEAR_ARD_NO_PLOT", "0") == "1") return;
  std::vector<std::string> argv{plot_python(), plot_script()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string command;
  for (const auto& a : argv) command += (command.empty() ? "" : " ") + a;
  std::vector<char*> raw;
  for (auto& a : argv) raw.push_back(a.data());
  raw.push_back(nullptr);
  // The script's own output goes to stderr: stdout holds the command's report.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  pid_t pid = 0;
  int status = 0;
  const int spawned = fs::exists(argv[1]) ? posix_spawnp(&pid, raw[0], &actions, nullptr, raw.data(), environ) : -1;
  posix_spawn_file_actions_destroy(&actions);
  const bool ok = spawned == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!ok) {
    std::cerr << "linear-ard: warning: the plots were not drawn (" << (spawned == 0 ? "the script failed" : "cannot run it")
              << "); draw them with: " << command << std::endl;
  } else if (!quiet) {
    std::cerr << "[plot] " << command << std::endl;
  }
}

void plot_training_curves(const std::string& output) {
  if (env_or("RANK", "0") != "0") return;
  const fs::path metrics = fs::path(output) / "metrics.jsonl";
  if (fs::exists(metrics)) plot_run({"curves", metrics.string(), "-o", (fs::path(output) / "training_curves").string()}, false);
}

}  // namespace linear_ard::cli
