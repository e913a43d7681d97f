// bench_lm_loss: the LM loss of stage 2 / CPT alone, the chunked LM head + cross-entropy
// (model/lm_head_loss.h) beside the unfused computation it replaced in the trainer (linear, .float(),
// cross_entropy, autograd), forward + backward on the same inputs in the same process: median time
// (CUDA synchronised wall clock) and peak memory beyond the inputs, with the head's weight frozen
// (stage 2: Q/K/V trainable) or trainable (CPT: every tensor). A benchmark, not a test: a table last.
//   bench_lm_loss [--positions 32768] [--vocab 49152] [--width 576] [--steps 5] [--tiny]
// Defaults: SmolLM2-135M's head at 32K positions in bf16 on the GPU; --tiny: a small case on the CPU
// in fp32 (a smoke run; figures mean nothing).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#ifdef LINEAR_ARD_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#endif

#include "linear_ard/model/lm_head_loss.h"  // defines: lm_head_cross_entropy

namespace {

struct Options {
  int64_t positions = 32768, vocab = 49152, width = 576;
  int steps = 5;
  bool tiny = false;
};

void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize();
}

// Peak allocated bytes since the last reset (0 on the CPU).
int64_t peak_bytes(const torch::Device& device, bool reset) {
#ifdef LINEAR_ARD_WITH_CUDA
  if (device.is_cuda()) {
    const int index = device.index() < 0 ? 0 : device.index();
    if (reset) c10::cuda::CUDACachingAllocator::resetPeakStats(index);
    return c10::cuda::CUDACachingAllocator::getDeviceStats(index).allocated_bytes[0].peak;
  }
#endif
  (void)device, (void)reset;
  return 0;
}

struct Timing {
  double ms = 0, peak_gib = 0, loss = 0;
};

// Median of `steps` runs after one warm-up, and the peak memory of one run beyond what was allocated
// before it.
Timing measure(const std::function<torch::Tensor()>& step, const torch::Device& device, int steps) {
  Timing t;
  t.loss = step().item<double>();
  sync(device);
  const int64_t before = peak_bytes(device, true);
  step();
  sync(device);
  t.peak_gib = static_cast<double>(peak_bytes(device, false) - before) / (1 << 30);
  std::vector<double> times;
  for (int i = 0; i < steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    step();
    sync(device);
    times.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(times.begin(), times.end());
  t.ms = times[times.size() / 2];
  return t;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "bench_lm_loss: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return std::atoll(argv[++i]);
    };
    if (a == "--positions") {
      o.positions = value();
    } else if (a == "--vocab") {
      o.vocab = value();
    } else if (a == "--width") {
      o.width = value();
    } else if (a == "--steps") {
      o.steps = static_cast<int>(value());
    } else if (a == "--tiny") {
      o.tiny = true, o.positions = 512, o.vocab = 1000, o.width = 64, o.steps = 2;
    } else {
      std::fprintf(stderr, "bench_lm_loss: unknown argument %s\n", a.c_str());
      std::exit(2);
    }
  }
  if (o.positions < 1 || o.vocab < 1 || o.width < 1 || o.steps < 1) {
    std::fprintf(stderr, "bench_lm_loss: --positions, --vocab, --width and --steps must be >= 1\n");
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const bool cuda = torch::cuda::is_available() && !o.tiny;
  const torch::Device device = cuda ? torch::Device(torch::kCUDA) : torch::Device(torch::kCPU);
  const torch::ScalarType dtype = cuda ? torch::kBFloat16 : torch::kFloat;
  torch::manual_seed(0);
  const auto opts = torch::TensorOptions(dtype).device(device);
  const torch::Tensor hidden0 = torch::randn({o.positions, o.width}, opts);
  const torch::Tensor weight0 =
      (0.05 * torch::randn({o.vocab, o.width}, torch::TensorOptions().device(device))).to(dtype);
  const torch::Tensor targets =
      torch::randint(0, o.vocab, {o.positions}, torch::TensorOptions(torch::kLong).device(device));
  std::printf("bench_lm_loss: %s, %s, %lld positions, vocabulary %lld, width %lld\n",
              cuda ? "CUDA" : "CPU (smoke run)", c10::toString(dtype),
              static_cast<long long>(o.positions), static_cast<long long>(o.vocab), static_cast<long long>(o.width));
  std::printf("| head weight | unfused ms | unfused peak GiB | chunked ms | chunked peak GiB | speed-up | memory "
              "| loss unfused / chunked |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (bool train_weight : {false, true}) {
    const torch::Tensor hidden = hidden0.detach().requires_grad_();
    const torch::Tensor weight = weight0.detach().requires_grad_(train_weight);
    auto unfused = [&] {
      hidden.mutable_grad() = torch::Tensor(), weight.mutable_grad() = torch::Tensor();
      namespace F = torch::nn::functional;
      const torch::Tensor loss = F::cross_entropy(F::linear(hidden, weight).to(torch::kFloat), targets);
      loss.backward();
      return loss.detach();
    };
    auto chunked = [&] {
      hidden.mutable_grad() = torch::Tensor(), weight.mutable_grad() = torch::Tensor();
      const torch::Tensor loss = linear_ard::model::lm_head_cross_entropy(hidden, weight, {}, targets).loss;
      loss.backward();
      return loss.detach();
    };
    const Timing u = measure(unfused, device, o.steps), c = measure(chunked, device, o.steps);
    std::printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2fx | %.2fx | %.6g / %.6g |\n",
                train_weight ? "trainable (CPT)" : "frozen (stage 2)", u.ms, u.peak_gib, c.ms, c.peak_gib,
                u.ms / c.ms, c.peak_gib / std::max(u.peak_gib, 1e-9), u.loss, c.loss);
  }
  return 0;
}
