// Starting scripts/tensorboard_follow.py beside a training run.
#include "tensorboard_run.h"

#include <chrono>
#include <cstdlib>
#include <string>

namespace linear_ard::cli {

namespace {

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v && std::string(v) == value;
}

}  // namespace

std::unique_ptr<PythonFollower> tensorboard_follow_start(const std::string& output, bool enabled) {
  const char* rank = std::getenv("RANK");
  if (!enabled || env_is("LINEAR_ARD_NO_TENSORBOARD", "1") || (rank && *rank && std::string(rank) != "0")) return nullptr;
  // The follower ignores a metrics.jsonl older than this run (a previous run's, in a folder this run
  // may still refuse to touch).
  const double now = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  return std::make_unique<PythonFollower>(
      std::vector<std::string>{python_script("tensorboard_follow.py"), output, "--since", std::to_string(now)},
      "the TensorBoard writer (scripts/tensorboard_follow.py)");
}

}  // namespace linear_ard::cli
