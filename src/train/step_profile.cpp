// step_profile: torch's profiler (Kineto) over chosen steps, phase ranges, the per-step summary.
#include "linear_ard/train/step_profile.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>

namespace linear_ard::train {

namespace {

namespace fs = std::filesystem;
namespace prof = torch::autograd::profiler;
namespace impl = torch::profiler::impl;

constexpr const char* kPhasePrefix = "phase:";  // not "linear_ard::": that is our torch ops' namespace

// Whether a StepProfile is running, and whether (and which CUDA device, -1: the current one) its
// phase boundaries synchronize.
std::atomic<bool> g_profiling{false}, g_sync_cuda{false};
std::atomic<int> g_cuda_index{-1};

void sync_if_profiling() {
  if (g_profiling.load() && g_sync_cuda.load()) torch::cuda::synchronize(g_cuda_index.load());
}

struct Totals {
  int64_t calls = 0;
  double ns = 0;
};

std::string shorten(std::string name, size_t max = 90) {
  if (name.size() > max) name = name.substr(0, max - 3) + "...";
  for (char& ch : name)
    if (ch == '|') ch = '/';
  return name;
}

// Self time of each CPU operator (its time less its nested operators'), per name, and how many of
// them were outermost (called by no other operator: the ones the step's code issued).
void cpu_self_times(const std::vector<const prof::KinetoEvent*>& ops, std::map<std::string, Totals>& self,
                    int64_t& outermost) {
  std::map<uint64_t, std::vector<const prof::KinetoEvent*>> by_thread;
  for (const auto* e : ops) by_thread[e->startThreadId()].push_back(e);
  for (auto& [thread, events] : by_thread) {
    std::sort(events.begin(), events.end(), [](const auto* a, const auto* b) {
      return a->startNs() != b->startNs() ? a->startNs() < b->startNs() : a->endNs() > b->endNs();
    });
    std::vector<std::pair<const prof::KinetoEvent*, double>> stack;  // event, its children's time
    auto close = [&](uint64_t until) {
      while (!stack.empty() && stack.back().first->endNs() <= until) {
        const auto [e, children] = stack.back();
        stack.pop_back();
        Totals& t = self[e->name()];
        t.calls += 1;
        t.ns += static_cast<double>(e->durationNs()) - children;
      }
    };
    for (const auto* e : events) {
      close(e->startNs());
      if (stack.empty()) ++outermost;
      else stack.back().second += static_cast<double>(e->durationNs());
      stack.emplace_back(e, 0.0);
    }
    close(UINT64_MAX);
  }
}

// Rows of `totals` sorted by time, the top `n`, as a markdown table per step.
void table_write(std::ofstream& out, const std::map<std::string, Totals>& totals, double steps, double all_ns,
                 const std::string& what, size_t n) {
  std::vector<std::pair<std::string, Totals>> rows(totals.begin(), totals.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  out << "| " << what << " | calls/step | ms/step | share |\n|---|---:|---:|---:|\n";
  for (size_t i = 0; i < rows.size() && i < n; ++i) {
    char line[256];
    std::snprintf(line, sizeof line, " | %.1f | %.3f | %.1f %% |\n", static_cast<double>(rows[i].second.calls) / steps,
                  rows[i].second.ns / steps / 1e6, all_ns > 0 ? 100.0 * rows[i].second.ns / all_ns : 0.0);
    out << "| `" << shorten(rows[i].first) << "`" << line;
  }
  out << "\n";
}

void summary_write(const std::string& path, const prof::ProfilerResult& result, int64_t steps, int64_t tokens,
                   const std::string& title) {
  std::map<std::string, Totals> phases, kernels, self;
  std::vector<const prof::KinetoEvent*> ops;
  double device_ns = 0;
  for (const auto& e : result.events()) {
    const std::string name = e.name();
    if (e.deviceType() != c10::DeviceType::CPU) {
      kernels[name].calls += 1;
      kernels[name].ns += static_cast<double>(e.durationNs());
      device_ns += static_cast<double>(e.durationNs());
    } else if (name.rfind(kPhasePrefix, 0) == 0) {
      phases[name.substr(std::string(kPhasePrefix).size())].calls += 1;
      phases[name.substr(std::string(kPhasePrefix).size())].ns += static_cast<double>(e.durationNs());
    } else if (name.rfind("aten::", 0) == 0) {
      ops.push_back(&e);
    }
  }
  int64_t outermost = 0;
  cpu_self_times(ops, self, outermost);
  double phase_ns = 0, cpu_ns = 0, kernel_calls = 0;
  for (const auto& [k, t] : phases) phase_ns += t.ns;
  for (const auto& [k, t] : self) cpu_ns += t.ns;
  for (const auto& [k, t] : kernels) kernel_calls += static_cast<double>(t.calls);
  const double n = static_cast<double>(steps);
  std::ofstream out(path);
  char head[512];
  std::snprintf(head, sizeof head,
                "# Profile: %s\n\n%ld profiled step(s), %ld tokens each; phases synchronized (device time).\n\n"
                "- phases: %.2f ms/step (%.0f tokens/s over the phases)\n"
                "- CPU operators: %.0f/step, %.0f of them outermost; %.2f ms/step of operator self time\n"
                "- device: %.0f kernels and copies/step, %.2f ms/step busy\n\n",
                title.c_str(), static_cast<long>(steps), static_cast<long>(tokens), phase_ns / n / 1e6,
                phase_ns > 0 ? static_cast<double>(tokens) * n / (phase_ns / 1e9) : 0.0,
                static_cast<double>(ops.size()) / n, static_cast<double>(outermost) / n, cpu_ns / n / 1e6,
                kernel_calls / n, device_ns / n / 1e6);
  out << head;
  table_write(out, phases, n, phase_ns, "phase", phases.size());
  if (!kernels.empty()) table_write(out, kernels, n, device_ns, "device kernel", 25);
  table_write(out, self, n, cpu_ns, "CPU operator (self time)", 25);
}

}  // namespace

StepProfile::StepProfile(std::string folder, int64_t first, int64_t steps, torch::Device device)
    : folder_(std::move(folder)), first_(first), last_(first + steps - 1), device_(device) {
  if (steps < 1) throw std::invalid_argument("StepProfile: steps must be >= 1, got " + std::to_string(steps));
}

StepProfile::~StepProfile() {
  if (active_) {
    g_profiling.store(false);
    prof::disableProfiler();
  }
}

void StepProfile::step_begin(int64_t global_step) {
  if (global_step != first_ || active_) return;
  std::set<impl::ActivityType> activities{impl::ActivityType::CPU};
  if (device_.is_cuda()) activities.insert(impl::ActivityType::CUDA);
  const impl::ProfilerConfig config(impl::ProfilerState::KINETO);
  prof::prepareProfiler(config, activities);
  g_sync_cuda.store(device_.is_cuda());
  g_cuda_index.store(device_.is_cuda() && device_.has_index() ? device_.index() : -1);
  g_profiling.store(true);
  sync_if_profiling();
  prof::enableProfiler(config, activities);
  active_ = true;
  tokens_ = 0;
}

void StepProfile::step_end(int64_t global_step, int64_t tokens, const std::string& title) {
  if (!active_) return;
  tokens_ = tokens;
  if (global_step < last_) return;
  sync_if_profiling();
  std::unique_ptr<prof::ProfilerResult> result = prof::disableProfiler();
  g_profiling.store(false);
  active_ = false;
  fs::create_directories(folder_);
  result->save((fs::path(folder_) / "trace.json").string());
  const std::string summary = (fs::path(folder_) / "summary.md").string();
  summary_write(summary, *result, last_ - first_ + 1, tokens_, title);
  std::printf("profile: steps %ld-%ld written to %s (trace.json, summary.md)\n", static_cast<long>(first_),
              static_cast<long>(last_), folder_.c_str());
}

bool step_profile_active() { return g_profiling.load(); }

PhaseScope::PhaseScope(const char* name) {
  if (!g_profiling.load()) return;
  sync_if_profiling();
  range_.emplace(at::RecordScope::USER_SCOPE);
  if (range_->isActive())
    range_->before(std::string_view(std::string(kPhasePrefix) + name), c10::ArrayRef<const c10::IValue>{});
}

PhaseScope::~PhaseScope() {
  if (!range_) return;
  sync_if_profiling();
  range_.reset();
}

}  // namespace linear_ard::train
