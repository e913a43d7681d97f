// run_signal: SIGINT and SIGTERM while a run trains. The first one sets a flag that the stage loop
// polls after each step: the step finishes, a checkpoint is written and the run stops, saying how
// to resume (RunInterrupted). A second one restores the default action and re-raises it, so a user
// who presses Ctrl-C twice gets out at once.
#pragma once

#include <stdexcept>
#include <string>

namespace linear_ard::train {

// Installs the handlers for its lifetime (the previous ones come back after). One at a time.
class RunSignals {
 public:
  RunSignals();
  ~RunSignals();
  RunSignals(const RunSignals&) = delete;
  RunSignals& operator=(const RunSignals&) = delete;

  // The signal received since the handlers were installed (SIGINT, SIGTERM), 0 when none.
  static int pending();
};

// "SIGINT", "SIGTERM", or "signal <n>".
std::string run_signal_name(int signal);

// Thrown by a run that stopped on a signal after writing its checkpoint; what() says which step
// and how to resume. The command exits with 128 + signal, the shell's status for that signal.
class RunInterrupted : public std::runtime_error {
 public:
  RunInterrupted(int signal, const std::string& message) : std::runtime_error(message), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

}  // namespace linear_ard::train
