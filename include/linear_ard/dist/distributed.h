// Distributed: this process's place in a multi-process run launched the standard way (torchrun's
// env:// rendezvous: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK), and the collectives the
// trainer and the evaluators need, on libtorch's c10d (TCPStore; ProcessGroupNCCL on CUDA,
// ProcessGroupGloo on CPU).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/torch.h>

namespace linear_ard::dist {

class Distributed {
 public:
  // Joins the process group described by the environment when WORLD_SIZE > 1, else returns null
  // (a single process runs exactly as without this class). `device` is where the run computes: a
  // CUDA device selects NCCL on GPU LOCAL_RANK (made the current device), the CPU selects gloo.
  // Collectives fail after LINEAR_ARD_DIST_TIMEOUT seconds [600] instead of hanging on a dead rank.
  // Ranks other than 0 print nothing on stdout (rank 0 reports for all); stderr stays.
  // Throws std::invalid_argument naming the variable when the environment is incomplete or wrong.
  static std::unique_ptr<Distributed> from_env(const torch::Device& device);

  ~Distributed();

  int64_t rank() const { return rank_; }
  int64_t world_size() const { return world_size_; }
  int64_t local_rank() const { return local_rank_; }
  bool is_main() const { return rank_ == 0; }
  // The device this rank computes on (cuda:LOCAL_RANK or cpu); collectives take tensors there.
  const torch::Device& device() const { return device_; }
  const std::string& backend_name() const { return backend_name_; }
  std::chrono::milliseconds timeout() const { return timeout_; }

  // Starts a sum over ranks of `tensor` (on device()), in place; wait with work_wait.
  c10::intrusive_ptr<c10d::Work> all_reduce_start(torch::Tensor& tensor) const;
  // Waits for `work`; a failure (a rank died, the timeout passed) becomes a std::runtime_error
  // saying so, with c10d's message.
  void work_wait(const c10::intrusive_ptr<c10d::Work>& work, const std::string& what) const;
  // Sum over ranks, in place, waited for.
  void all_reduce_sum(torch::Tensor& tensor, const std::string& what) const;
  // Rank 0's values of `tensor` on every rank, in place.
  void broadcast(torch::Tensor& tensor, const std::string& what) const;
  void barrier(const std::string& what) const;
  // Rank 0's `value` on every rank (through the rendezvous store).
  std::string broadcast_string(const std::string& value) const;

  // Items 0..count-1 are split over the ranks: item i belongs to rank i % world_size.
  bool item_owned(int64_t i) const { return i % world_size_ == rank_; }
  // `local` holds `width` doubles for each of this rank's items, in item order; returns every
  // item's `width` doubles in item order, on every rank.
  std::vector<double> items_gather(int64_t count, int64_t width, const std::vector<double>& local) const;

  // Runs `fn` on every rank and agrees on the outcome: when it throws on any rank, every rank
  // throws (the failing ones their own error, the others one naming the failed ranks), so no rank
  // goes on to wait in a collective for a rank that has stopped.
  void run_agreed(const std::string& what, const std::function<void()>& fn) const;

 private:
  Distributed() = default;

  int64_t rank_ = 0, world_size_ = 1, local_rank_ = 0;
  torch::Device device_ = torch::kCPU;
  std::string backend_name_;
  std::chrono::milliseconds timeout_{0};
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  mutable int64_t store_key_ = 0;  // broadcast_string's next key
  // The last resort against a collective that never returns (NCCL: a peer died and the main thread
  // sits in a device sync the backend's own watchdog does not break): a detached thread that ends
  // the process with an error naming the wait when one outlives the timeout by a grace period.
  struct WaitGuard;
  std::shared_ptr<WaitGuard> guard_;
};

// The process's rank in a torchrun launch for commands that do not own one run (eval): joined with
// Distributed::from_env(device) on the first call and kept for the life of the process (never torn
// down: static destructors run after CUDA's own). Null for one process; later calls return the same.
const Distributed* distributed_process(const torch::Device& device);
// What distributed_process joined, or null (nothing joined, or one process).
const Distributed* distributed_joined();

// Runs item(k) for each k in [0, count) on the rank that owns it (Distributed::item_owned; every k
// when `distributed` is null), each giving at most `width` doubles (zero-padded to `width`), and
// returns every item's `width` doubles in item order, on every rank.
std::vector<double> items_run(const Distributed* distributed, int64_t count, int64_t width,
                              const std::function<std::vector<double>(int64_t)>& item);

}  // namespace linear_ard::dist
