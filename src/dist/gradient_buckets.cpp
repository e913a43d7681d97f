// gradient_buckets: gradients as views of flat bucket buffers, all-reduced from post-accumulate-grad
// hooks during backward.
#include "linear_ard/dist/gradient_buckets.h"

#include <stdexcept>

#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

namespace linear_ard::dist {
namespace {

struct AccumulatedHook : torch::autograd::PostAccumulateGradHook {
  std::function<void()> fn;
  explicit AccumulatedHook(std::function<void()> f) : fn(std::move(f)) {}
  void operator()(const torch::autograd::Variable&) override { fn(); }
};

}  // namespace

GradientBuckets::GradientBuckets(const Distributed& distributed, std::vector<torch::Tensor> parameters,
                                 int64_t bucket_bytes)
    : distributed_(distributed), parameters_(std::move(parameters)) {
  if (parameters_.empty()) throw std::invalid_argument("GradientBuckets: no trainable tensors");
  const auto options = parameters_.front().options();
  bucket_of_.assign(parameters_.size(), 0);
  offset_of_.assign(parameters_.size(), 0);
  std::vector<std::vector<size_t>> groups(1);
  int64_t bytes = 0;
  for (size_t k = parameters_.size(); k-- > 0;) {
    const torch::Tensor& p = parameters_[k];
    if (p.dtype() != options.dtype() || p.device() != options.device() || !p.is_leaf() || !p.requires_grad())
      throw std::invalid_argument("GradientBuckets: trainable tensors must be leaves of one dtype and device");
    const int64_t size = p.numel() * static_cast<int64_t>(p.element_size());
    if (!groups.back().empty() && bytes + size > bucket_bytes) groups.emplace_back(), bytes = 0;
    groups.back().push_back(k);
    bytes += size;
  }
  buckets_.resize(groups.size());
  for (size_t b = 0; b < groups.size(); ++b) {
    Bucket& bucket = buckets_[b];
    int64_t numel = 0;
    for (size_t k : groups[b]) {
      bucket.members.push_back(k);
      bucket.offsets.push_back(numel);
      bucket_of_[k] = b;
      offset_of_[k] = numel;
      numel += parameters_[k].numel();
    }
    bucket.flat = torch::zeros({numel}, options);
  }
  for (size_t k = 0; k < parameters_.size(); ++k) {
    auto& slot = torch::autograd::impl::post_acc_grad_hooks(parameters_[k]);
    if (slot) throw std::logic_error("GradientBuckets: a trainable tensor already has a post-accumulate-grad hook");
    torch::autograd::impl::set_post_acc_grad_hooks(parameters_[k],
                                                   std::make_unique<AccumulatedHook>([this, k] { on_accumulated(k); }));
  }
}

GradientBuckets::~GradientBuckets() {
  for (auto& p : parameters_) torch::autograd::impl::set_post_acc_grad_hooks(p, nullptr);
}

void GradientBuckets::step_begin() {
  for (Bucket& bucket : buckets_) {
    bucket.flat.zero_();
    for (size_t m = 0; m < bucket.members.size(); ++m) {
      torch::Tensor& p = parameters_[bucket.members[m]];
      p.mutable_grad() = bucket.flat.narrow(0, bucket.offsets[m], p.numel()).view(p.sizes());
    }
  }
}

void GradientBuckets::arm() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Bucket& bucket : buckets_) bucket.pending = static_cast<int64_t>(bucket.members.size());
  next_bucket_ = 0;
  armed_ = true;
}

void GradientBuckets::buckets_start(bool all) {
  // Every rank must issue its collectives in the same order, whatever order its hooks ran in: the
  // buckets start in index order, each once every bucket before it has (as c10d's Reducer does).
  while (next_bucket_ < buckets_.size() && (all || buckets_[next_bucket_].pending == 0)) {
    Bucket& bucket = buckets_[next_bucket_++];
    bucket.work = distributed_.all_reduce_start(bucket.flat);
  }
}

void GradientBuckets::on_accumulated(size_t parameter) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!armed_) return;
  Bucket& bucket = buckets_[bucket_of_[parameter]];
  // Backward accumulates into the view step_begin installed; a replaced gradient would be lost.
  const torch::Tensor& grad = parameters_[parameter].grad();
  if (!grad.defined() || grad.data_ptr() != static_cast<char*>(bucket.flat.data_ptr()) +
                                               offset_of_[parameter] * bucket.flat.element_size())
    throw std::logic_error("GradientBuckets: a gradient is no longer its bucket's view (call step_begin after "
                           "zero_grad)");
  if (--bucket.pending == 0) buckets_start(/*all=*/false);
}

void GradientBuckets::finish() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    armed_ = false;
    buckets_start(/*all=*/true);
  }
  for (Bucket& bucket : buckets_) {
    distributed_.work_wait(bucket.work, "gradient all-reduce");
    bucket.work.reset();
    bucket.flat.div_(static_cast<double>(distributed_.world_size()));
  }
}

}  // namespace linear_ard::dist
