// Running the Python helpers from the binary: locating Python, the scripts and the linear_ard
// package, and spawning them with posix_spawn.
#include "python_run.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

extern char** environ;

namespace linear_ard::cli {

namespace {

namespace fs = std::filesystem;

fs::path binary_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe.parent_path();
}

// The folder to put on PYTHONPATH so that `import linear_ard` finds this binary's package; empty
// when none is found (the Python may still have it installed).
std::string package_parent() {
  const fs::path bin = binary_dir();
  std::error_code ec;
  if (!bin.empty()) {
    // pip install: <site-packages>/linear_ard/bin/linear-ard.
    if (fs::exists(bin.parent_path() / "__init__.py", ec)) return bin.parent_path().parent_path().string();
    // cmake --install: <prefix>/bin and <prefix>/lib/pythonX.Y/site-packages/linear_ard.
    for (const auto& lib : fs::directory_iterator(bin.parent_path() / "lib", ec)) {
      const fs::path site = lib.path() / "site-packages";
      if (lib.path().filename().string().rfind("python", 0) == 0 && fs::exists(site / "linear_ard", ec))
        return site.string();
    }
  }
  const fs::path source = fs::path(LINEAR_ARD_SOURCE_DIR) / "python";
  return fs::exists(source / "linear_ard", ec) ? source.string() : "";
}

// This process's environment with PYTHONPATH led by package_parent().
std::vector<std::string> child_environment() {
  std::vector<std::string> env;
  std::string pythonpath = package_parent();
  for (char** e = environ; *e; ++e) {
    if (std::strncmp(*e, "PYTHONPATH=", 11) == 0) {
      const std::string old = *e + 11;
      if (!old.empty()) pythonpath += (pythonpath.empty() ? "" : ":") + old;
    } else {
      env.emplace_back(*e);
    }
  }
  if (!pythonpath.empty()) env.push_back("PYTHONPATH=" + pythonpath);
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!std::getenv("LINEAR_ARD_BINARY") && !ec) env.push_back("LINEAR_ARD_BINARY=" + exe.string());
  return env;
}

std::vector<char*> raw_of(std::vector<std::string>& strings) {
  std::vector<char*> raw;
  for (auto& s : strings) raw.push_back(s.data());
  raw.push_back(nullptr);
  return raw;
}

// Spawns `python args...` with stdout on stderr unless `report` and, when `input` >= 0, that
// descriptor as stdin.
pid_t python_spawn(const std::vector<std::string>& args, int input, bool report = false) {
  std::vector<std::string> argv{python_executable()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<std::string> env = child_environment();
  std::vector<char*> raw_argv = raw_of(argv), raw_env = raw_of(env);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!report) posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  if (input >= 0) posix_spawn_file_actions_adddup2(&actions, input, STDIN_FILENO);
  pid_t pid = -1;
  const int spawned = posix_spawnp(&pid, raw_argv[0], &actions, nullptr, raw_argv.data(), raw_env.data());
  posix_spawn_file_actions_destroy(&actions);
  return spawned == 0 ? pid : -1;
}

int wait_status(pid_t pid) {
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

std::string command_text(const std::vector<std::string>& args) {
  std::string command = python_executable();
  for (const auto& a : args) command += " " + a;
  return command;
}

}  // namespace

std::string python_executable() {
  if (const char* v = std::getenv("LINEAR_ARD_PYTHON"); v && *v) return v;
  const std::string configured = LINEAR_ARD_CONFIGURED_PYTHON;
  std::error_code ec;
  return !configured.empty() && fs::exists(configured, ec) ? configured : "python3";
}

std::string python_script(const std::string& name) {
  const fs::path bin = binary_dir();
  std::error_code ec;
  if (!bin.empty()) {
    const fs::path installed = bin.parent_path() / "share" / "linear-ard" / name;
    if (fs::exists(installed, ec)) return installed.string();
  }
  return (fs::path(LINEAR_ARD_SOURCE_DIR) / "scripts" / name).string();
}

int python_run(const std::vector<std::string>& args, bool report) {
  std::cout.flush();
  return wait_status(python_spawn(args, -1, report));
}

PythonFollower::PythonFollower(const std::vector<std::string>& args, const std::string& what) : what_(what) {
  int fds[2];
  // The write end is close-on-exec: no other child (the plot script) holds it open past this run.
  if (pipe2(fds, O_CLOEXEC) == 0) {
    pid_ = python_spawn(args, fds[0]);
    close(fds[0]);
    input_ = fds[1];
  }
  // A helper that died early must not kill this process when finish() closes the pipe.
  signal(SIGPIPE, SIG_IGN);
  if (pid_ < 0) {
    if (input_ >= 0) close(input_);
    input_ = -1;
    std::cerr << "linear-ard: warning: " << what_ << " could not start: " << command_text(args) << std::endl;
  }
}

PythonFollower::~PythonFollower() { finish(); }

void PythonFollower::finish() {
  if (pid_ < 0) return;
  close(input_);
  const int status = wait_status(pid_);
  pid_ = -1;
  if (status != 0) std::cerr << "linear-ard: warning: " << what_ << " ended with status " << status << std::endl;
}

}  // namespace linear_ard::cli
