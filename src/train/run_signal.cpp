// run_signal: the SIGINT/SIGTERM flag a run's stage loop polls.
#include "linear_ard/train/run_signal.h"

#include <csignal>

namespace linear_ard::train {
namespace {

volatile std::sig_atomic_t received = 0;
struct sigaction previous_int, previous_term;

extern "C" void run_signal_handle(int signal) {
  if (received != 0) {
    // The second signal: out at once, as without the handler.
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  received = signal;
}

}  // namespace

RunSignals::RunSignals() {
  received = 0;
  struct sigaction action {};
  action.sa_handler = run_signal_handle;
  sigemptyset(&action.sa_mask);
  // SA_RESTART: a read the signal interrupts resumes instead of failing with EINTR mid-step.
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, &previous_int);
  sigaction(SIGTERM, &action, &previous_term);
}

RunSignals::~RunSignals() {
  sigaction(SIGINT, &previous_int, nullptr);
  sigaction(SIGTERM, &previous_term, nullptr);
}

int RunSignals::pending() { return received; }

std::string run_signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

}  // namespace linear_ard::train
