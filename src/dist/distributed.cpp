// distributed: env:// rendezvous on a c10d TCPStore, a gloo or NCCL backend, and the few
// collectives the trainer and the evaluators use.
#include "linear_ard/dist/distributed.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#if defined(LINEAR_ARD_WITH_NCCL) && defined(USE_C10D_NCCL)
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

namespace linear_ard::dist {

// What a collective wait is, and until when it may last (0: no wait in progress).
struct Distributed::WaitGuard {
  std::atomic<int64_t> deadline_ms{0};
  std::mutex mutex;
  std::string what;

  // Polls once a second; past a deadline, ends the process (the waiting thread cannot be unblocked).
  void watch(int64_t rank, std::chrono::milliseconds timeout) {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const int64_t deadline = deadline_ms.load();
      if (deadline != 0 && now_ms() > deadline) {
        std::lock_guard<std::mutex> lock(mutex);
        std::fprintf(stderr,
                     "linear-ard: error: rank %lld: %s did not complete within the %lld s timeout "
                     "(LINEAR_ARD_DIST_TIMEOUT) plus 30 s: another rank died or hangs; stopping\n",
                     static_cast<long long>(rank), what.c_str(), static_cast<long long>(timeout.count() / 1000));
        std::fflush(stderr);
        std::_Exit(1);
      }
    }
  }
  static int64_t now_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

namespace {

std::string env_text(const char* name, bool required) {
  const char* v = std::getenv(name);
  if (!v || !*v) {
    if (required)
      throw std::invalid_argument(std::string("distributed run (WORLD_SIZE > 1): environment variable ") + name +
                                  " is not set; launch with torchrun, or set RANK, WORLD_SIZE, MASTER_ADDR, "
                                  "MASTER_PORT and LOCAL_RANK");
    return "";
  }
  return v;
}

int64_t env_int(const char* name, bool required, int64_t fallback) {
  const std::string text = env_text(name, required);
  if (text.empty()) return fallback;
  size_t used = 0;
  int64_t value = 0;
  try {
    value = std::stoll(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || value < 0)
    throw std::invalid_argument(std::string("environment variable ") + name + "=" + text +
                                " is not a non-negative integer");
  return value;
}

// The run's store, under a prefix of this torchrun attempt. torchrun's agent already serves a
// TCPStore on MASTER_ADDR:MASTER_PORT and says so; without it (processes started by hand) rank 0
// serves it, as torch.distributed's env:// does.
c10::intrusive_ptr<c10d::Store> store_connect(const std::string& addr, int64_t port, int64_t rank, int64_t world,
                                              std::chrono::milliseconds timeout) {
  const bool agent_store = env_text("TORCHELASTIC_USE_AGENT_STORE", false) == "True";
  c10d::TCPStoreOptions options;
  options.port = static_cast<std::uint16_t>(port);
  options.isServer = !agent_store && rank == 0;
  options.numWorkers = agent_store ? std::nullopt : std::optional<std::size_t>(static_cast<size_t>(world));
  options.waitWorkers = !agent_store;
  options.timeout = timeout;
  options.multiTenant = true;
  c10::intrusive_ptr<c10d::Store> tcp;
  try {
    tcp = c10::make_intrusive<c10d::TCPStore>(addr, options);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(rank) + ": rendezvous at " + addr + ":" +
                             std::to_string(port) + " failed (" + e.what() + ")");
  }
  // A restarted torchrun worker group must not read the keys of the previous attempt.
  const std::string attempt = env_text("TORCHELASTIC_RESTART_COUNT", false);
  return c10::make_intrusive<c10d::PrefixStore>("linear_ard/" + (attempt.empty() ? "0" : attempt), tcp);
}

// NCCL for a CUDA device, gloo for the CPU; `name` gets which.
c10::intrusive_ptr<c10d::Backend> backend_make(const torch::Device& device, const c10::intrusive_ptr<c10d::Store>& store,
                                               int64_t rank64, int64_t world, std::chrono::milliseconds timeout,
                                               std::string& name) {
  const int rank = static_cast<int>(rank64), size = static_cast<int>(world);
  if (device.is_cuda()) {
#if defined(LINEAR_ARD_WITH_NCCL) && defined(USE_C10D_NCCL)
    // The watchdog tears a rank down when a collective passes the timeout (e.g. a peer died), and
    // blocking waits make Work::wait itself return the error on the CPU (within the timeout) instead
    // of leaving the failure to a later device sync. No flight-recorder dump delays the exit.
    setenv("TORCH_NCCL_ASYNC_ERROR_HANDLING", "3", /*overwrite=*/0);
    setenv("TORCH_NCCL_BLOCKING_WAIT", "1", /*overwrite=*/0);
    setenv("TORCH_NCCL_DUMP_ON_TIMEOUT", "0", /*overwrite=*/0);
    auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
    nccl_options->timeout = timeout;
    name = "nccl";
    return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, rank, size, nccl_options);
#else
    throw std::invalid_argument("distributed run on CUDA: this build has no NCCL (nccl.h was not found at configure "
                                "time, or libtorch was built without USE_C10D_NCCL)");
#endif
  }
  auto gloo_options = c10d::ProcessGroupGloo::Options::create(timeout);
  const std::string interface = env_text("GLOO_SOCKET_IFNAME", false);
  gloo_options->devices.push_back(interface.empty() ? c10d::ProcessGroupGloo::createDefaultDevice()
                                                    : c10d::ProcessGroupGloo::createDeviceForInterface(interface));
  name = "gloo";
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, gloo_options);
}

}  // namespace

std::unique_ptr<Distributed> Distributed::from_env(const torch::Device& device) {
  const int64_t world = env_int("WORLD_SIZE", /*required=*/false, 1);
  if (world <= 1) return nullptr;
  std::unique_ptr<Distributed> d(new Distributed());
  d->world_size_ = world;
  d->rank_ = env_int("RANK", true, 0);
  d->local_rank_ = env_int("LOCAL_RANK", false, d->rank_);
  if (d->rank_ >= world)
    throw std::invalid_argument("environment: RANK=" + std::to_string(d->rank_) + " is not below WORLD_SIZE=" +
                                std::to_string(world));
  const std::string addr = env_text("MASTER_ADDR", true);
  const int64_t port = env_int("MASTER_PORT", true, 0);
  if (port <= 0 || port > 65535) throw std::invalid_argument("environment: MASTER_PORT=" + std::to_string(port) + " is not a port");
  d->timeout_ = std::chrono::milliseconds(env_int("LINEAR_ARD_DIST_TIMEOUT", false, 600) * 1000);
  if (d->timeout_.count() == 0) throw std::invalid_argument("environment: LINEAR_ARD_DIST_TIMEOUT must be > 0 seconds");

  if (device.is_cuda()) {
    const int64_t count = c10::impl::getDeviceGuardImpl(c10::kCUDA)->deviceCount();
    if (d->local_rank_ >= count)
      throw std::invalid_argument("environment: LOCAL_RANK=" + std::to_string(d->local_rank_) + " but this machine has " +
                                  std::to_string(count) + " CUDA devices (one process per GPU)");
    d->device_ = torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(d->local_rank_));
    // Tensors created on "cuda" (no index) land on this rank's GPU.
    c10::impl::getDeviceGuardImpl(c10::kCUDA)->setDevice(d->device_);
  }

  d->store_ = store_connect(addr, port, d->rank_, world, d->timeout_);
  d->backend_ = backend_make(device, d->store_, d->rank_, world, d->timeout_, d->backend_name_);
  d->guard_ = std::make_shared<WaitGuard>();
  std::thread([guard = d->guard_, rank = d->rank_, timeout = d->timeout_] { guard->watch(rank, timeout); }).detach();
  // The first collective connects every pair: a rank that never comes shows here, by name.
  d->barrier("joining the process group");
  // Rank 0 reports; the others' stdout would repeat it N times (stderr stays: errors name the rank).
  if (d->rank_ != 0 && !std::freopen("/dev/null", "w", stdout))
    throw std::runtime_error("rank " + std::to_string(d->rank_) + ": cannot silence stdout");
  return d;
}

Distributed::~Distributed() {
  // Unwinding from an error while other ranks may still wait in a collective: abort the
  // communicators rather than wait for them in the backend's destructor.
  if (std::uncaught_exceptions() > 0 && backend_) backend_->abort();
}

c10::intrusive_ptr<c10d::Work> Distributed::all_reduce_start(torch::Tensor& tensor) const {
  std::vector<torch::Tensor> tensors{tensor};
  return backend_->allreduce(tensors);
}

void Distributed::work_wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what) const {
  struct Armed {  // the guard watches this wait for as long as it lasts
    WaitGuard& g;
    Armed(WaitGuard& guard, const std::string& what, std::chrono::milliseconds timeout) : g(guard) {
      {
        std::lock_guard<std::mutex> lock(g.mutex);
        g.what = what;
      }
      g.deadline_ms = WaitGuard::now_ms() + timeout.count() + 30000;
    }
    ~Armed() { g.deadline_ms = 0; }
  };
  std::optional<Armed> armed;
  if (guard_) armed.emplace(*guard_, what, timeout_);
  try {
    work->wait(timeout_);
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(rank_) + " of " + std::to_string(world_size_) + ": " + what +
                             " failed (" + backend_name_ + "; a rank died, or the collective passed the " +
                             std::to_string(timeout_.count() / 1000) +
                             " s timeout LINEAR_ARD_DIST_TIMEOUT): " + e.what());
  }
}

void Distributed::all_reduce_sum(torch::Tensor& tensor, const std::string& what) const {
  work_wait(all_reduce_start(tensor), what);
}

void Distributed::broadcast(torch::Tensor& tensor, const std::string& what) const {
  std::vector<torch::Tensor> tensors{tensor};
  work_wait(backend_->broadcast(tensors), what);
}

void Distributed::barrier(const std::string& what) const {
  // A one-element all-reduce on our own device: NCCL's barrier would have to guess the device.
  torch::Tensor t = torch::zeros({1}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
  all_reduce_sum(t, what);
}

std::string Distributed::broadcast_string(const std::string& value) const {
  const std::string key = "broadcast/" + std::to_string(store_key_++);
  try {
    if (rank_ == 0) {
      store_->set(key, std::vector<uint8_t>(value.begin(), value.end()));
      return value;
    }
    const std::vector<uint8_t> bytes = store_->get(key);
    return std::string(bytes.begin(), bytes.end());
  } catch (const std::exception& e) {
    throw std::runtime_error("rank " + std::to_string(rank_) + ": reading rank 0's value from the store failed "
                             "(rank 0 died or passed the timeout): " + std::string(e.what()));
  }
}

std::vector<double> Distributed::items_gather(int64_t count, int64_t width, const std::vector<double>& local) const {
  if (count == 0) return {};  // the same on every rank: no collective to match
  const int64_t per_rank = (count + world_size_ - 1) / world_size_;
  const int64_t mine = count > rank_ ? (count - rank_ + world_size_ - 1) / world_size_ : 0;
  if (static_cast<int64_t>(local.size()) != mine * width)
    throw std::logic_error("items_gather: rank " + std::to_string(rank_) + " holds " + std::to_string(local.size()) +
                           " values for " + std::to_string(mine) + " items of width " + std::to_string(width));
  // Fixed-size slots (padded) so one all-gather moves everything.
  torch::Tensor slot = torch::zeros({per_rank * width}, torch::kDouble);
  if (!local.empty()) std::copy(local.begin(), local.end(), slot.data_ptr<double>());
  std::vector<torch::Tensor> input{slot.to(device_)};
  std::vector<std::vector<torch::Tensor>> output(1);
  for (int64_t r = 0; r < world_size_; ++r) output[0].push_back(torch::empty_like(input[0]));
  work_wait(backend_->allgather(output, input), "gathering evaluation results");
  std::vector<torch::Tensor> slots;
  for (const auto& t : output[0]) slots.push_back(t.cpu());
  std::vector<double> all(static_cast<size_t>(count * width));
  for (int64_t i = 0; i < count; ++i) {
    const double* src = slots[static_cast<size_t>(i % world_size_)].data_ptr<double>() + (i / world_size_) * width;
    std::copy(src, src + width, all.begin() + i * width);
  }
  return all;
}

void Distributed::run_agreed(const std::string& what, const std::function<void()>& fn) const {
  std::exception_ptr error;
  try {
    fn();
  } catch (...) {
    error = std::current_exception();
  }
  torch::Tensor failed = torch::zeros({world_size_}, torch::TensorOptions().dtype(torch::kFloat).device(device_));
  if (error) failed[rank_] = 1;
  all_reduce_sum(failed, what);
  if (error) std::rethrow_exception(error);
  const torch::Tensor which = failed.cpu().nonzero().flatten();
  if (which.numel() == 0) return;
  std::string ranks;
  for (int64_t i = 0; i < which.numel(); ++i) ranks += (i ? ", " : "") + std::to_string(which[i].item<int64_t>());
  throw std::runtime_error("rank " + std::to_string(rank_) + ": " + what + " failed on rank(s) " + ranks +
                           " (see their error)");
}

namespace {
bool process_joined = false;
const Distributed* process_rank = nullptr;
}  // namespace

const Distributed* distributed_process(const torch::Device& device) {
  if (!process_joined) {
    process_rank = Distributed::from_env(device).release();
    process_joined = true;
  } else if (process_rank && process_rank->device().type() != device.type()) {
    throw std::invalid_argument("distributed run: this process joined its process group on " +
                                process_rank->device().str() + " and cannot also compute on " + device.str());
  }
  return process_rank;
}

const Distributed* distributed_joined() { return process_rank; }

std::vector<double> items_run(const Distributed* distributed, int64_t count, int64_t width,
                              const std::function<std::vector<double>(int64_t)>& item) {
  std::vector<double> local;
  for (int64_t k = 0; k < count; ++k) {
    if (distributed && !distributed->item_owned(k)) continue;
    std::vector<double> values = item(k);
    if (static_cast<int64_t>(values.size()) > width)
      throw std::logic_error("items_run: item " + std::to_string(k) + " gave " + std::to_string(values.size()) +
                             " values, more than the width " + std::to_string(width));
    values.resize(static_cast<size_t>(width), 0.0);
    local.insert(local.end(), values.begin(), values.end());
  }
  return distributed ? distributed->items_gather(count, width, local) : local;
}

}  // namespace linear_ard::dist
