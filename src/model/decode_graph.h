// CUDA-graph replay of one greedy decode step (generate.cpp). On a fixed-capacity KV cache
// (kv_cache.h) every step runs the same kernels on the same addresses, so the step is captured once
// and then replayed: one launch from the host instead of a dozen a layer, which is what bounds a
// small model's decoding at batch 1.
#pragma once

#include <functional>
#include <memory>

#include <torch/torch.h>

#include "linear_ard/model/model_config.h"
#include "linear_ard/model/rope.h"

namespace linear_ard::model {

// Whether decoding `prompt` may replay a graph: a build with the CUDA kernels, a CUDA prompt, no
// sliding-window layer and a RoPE that does not depend on the length. LINEAR_ARD_NO_CUDA_GRAPHS=1
// (read once) turns it off, for timing one path against the other in one build.
bool decode_graph_supported(const ModelConfig& config, const RopeTables& rope, const torch::Tensor& prompt);

// Runs `step`, which must read and write only tensors that outlive this object and whose shapes
// and addresses do not change: the first run() executes it for real on a side stream (which also
// warms up cuBLAS and the allocator) and then captures it; every later run() replays the capture.
// In a build without CUDA, run() calls `step`.
class DecodeGraph {
 public:
  DecodeGraph(torch::Device device, std::function<void()> step);
  ~DecodeGraph();
  void run();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace linear_ard::model
