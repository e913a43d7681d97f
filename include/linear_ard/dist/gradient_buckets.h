// GradientBuckets: data-parallel gradient averaging of the trainable tensors, in buckets whose
// all-reduce starts during backward, as soon as the bucket's last gradient is accumulated.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include <torch/torch.h>

#include "linear_ard/dist/distributed.h"

namespace linear_ard::dist {

// Why hooks on our own buckets and not c10d::Reducer: the Reducer is DDP's engine, driven by the
// Python DistributedDataParallel (prepare_for_backward per forward, bucket rebuilding after the
// first iteration, no_sync for accumulation) and its constructor changes between torch releases;
// this trainer has a fixed set of fp32 leaf tensors, reduces once per optimizer step after A
// micro-batches, and must build against the GPU machine's torch as well as CI's. A post-accumulate-
// grad hook per tensor (the autograd engine's public extension point) gives the same overlap: the
// gradients live as views of one flat buffer per bucket (no copies), and a bucket's async all-reduce
// is launched from the hook of its last tensor on the step's last micro-batch.
class GradientBuckets {
 public:
  // `parameters`: the trainable leaf tensors (same dtype and device). Buckets are filled in reverse
  // order (backward reaches the last layers first) up to `bucket_bytes` each.
  GradientBuckets(const Distributed& distributed, std::vector<torch::Tensor> parameters,
                  int64_t bucket_bytes = int64_t{25} << 20);
  ~GradientBuckets();
  GradientBuckets(const GradientBuckets&) = delete;
  GradientBuckets& operator=(const GradientBuckets&) = delete;

  // Before a step's first backward (after the optimizer's zero_grad): every gradient becomes a
  // zeroed view of its bucket, so backward accumulates into the buckets.
  void step_begin();
  // Before the step's last backward: from now on a bucket whose tensors have all been accumulated
  // starts its all-reduce.
  void arm();
  // After the last backward: starts the buckets no hook started (tensors without a gradient this
  // step), waits for all, divides by the world size. Every rank then holds the mean gradient.
  void finish();

  int64_t bucket_count() const { return static_cast<int64_t>(buckets_.size()); }
  const Distributed& distributed() const { return distributed_; }

 private:
  struct Bucket {
    torch::Tensor flat;
    std::vector<size_t> members;  // indices into parameters_
    std::vector<int64_t> offsets;
    int64_t pending = 0;           // members not yet accumulated in the armed backward
    c10::intrusive_ptr<c10d::Work> work;
  };
  // Called by a tensor's hook after its gradient was accumulated.
  void on_accumulated(size_t parameter);
  // Starts the all-reduce of the next buckets in index order: those ready, or (all) every one left.
  void buckets_start(bool all);

  const Distributed& distributed_;
  std::vector<torch::Tensor> parameters_;
  std::vector<Bucket> buckets_;
  std::vector<size_t> bucket_of_;  // parameter index -> bucket
  std::vector<int64_t> offset_of_;
  std::mutex mutex_;  // hooks may run on the autograd engine's device threads
  bool armed_ = false;
  size_t next_bucket_ = 0;  // the next bucket to start, in index order
};

}  // namespace linear_ard::dist
