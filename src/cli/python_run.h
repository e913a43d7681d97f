// python_run: the Python helpers the binary runs beside itself (scripts/plot.py, scripts/export_gguf.py,
// scripts/tensorboard_follow.py, the lm-eval bridge in the linear_ard package): which Python, where
// the scripts and the package are, and running them to completion or alongside a run.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace linear_ard::cli {

// $LINEAR_ARD_PYTHON, else the Python the build was configured with (when it still exists), else
// python3 on PATH. (The `linear-ard` entry point that `pip install .` writes sets LINEAR_ARD_PYTHON
// to the Python it runs under.)
std::string python_executable();

// A script the binary runs: <binary dir>/../share/linear-ard/NAME (cmake --install, pip install),
// else the source tree's scripts/NAME.
std::string python_script(const std::string& name);

// Runs `python_executable() args...` and waits, with PYTHONPATH led by the folder holding the
// linear_ard package (prefix site-packages, pip's site-packages or the source tree's python/) and
// LINEAR_ARD_BINARY set to this binary (unless set), so the package runs this build. Its stdout goes
// to stderr (stdout holds the command's report) unless `report` (the script writes the report).
// Returns its exit status; -1 when it could not be started or did not exit normally.
int python_run(const std::vector<std::string>& args, bool report = false);

// A helper started beside a run that ends when its standard input closes: on finish(), on the
// destructor, or when this process dies, however it dies.
class PythonFollower {
 public:
  // Starts `python_executable() args...`; a helper that cannot start is a warning naming `what`.
  PythonFollower(const std::vector<std::string>& args, const std::string& what);
  ~PythonFollower();
  PythonFollower(const PythonFollower&) = delete;
  PythonFollower& operator=(const PythonFollower&) = delete;
  // Closes its input and waits for it; a helper that failed is a warning naming `what`.
  void finish();

 private:
  std::string what_;
  pid_t pid_ = -1;
  int input_ = -1;
};

}  // namespace linear_ard::cli
