// CUDA-graph replay of one decode step (decode_graph.h).
#include "decode_graph.h"

#include <cstdlib>
#include <cstring>

#ifdef LINEAR_ARD_MODEL_CUDA
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace linear_ard::model {

bool decode_graph_supported(const ModelConfig& config, const RopeTables& rope, const torch::Tensor& prompt) {
#ifdef LINEAR_ARD_MODEL_CUDA
  static const bool enabled = [] {
    const char* off = std::getenv("LINEAR_ARD_NO_CUDA_GRAPHS");
    return off == nullptr || std::strcmp(off, "1") != 0;
  }();
  if (!enabled || !prompt.is_cuda()) return false;
  if (rope.rope.type == RopeType::kDynamic || rope.rope.type == RopeType::kLongrope) return false;
  for (int64_t l = 0; l < config.num_hidden_layers; ++l)
    if (model_config_layer_window(config, l)) return false;
  return true;
#else
  (void)config, (void)rope, (void)prompt;
  return false;
#endif
}

struct DecodeGraph::Impl {
  Impl(torch::Device d, std::function<void()> s) : device(d), step(std::move(s)) {}
  torch::Device device;
  std::function<void()> step;
#ifdef LINEAR_ARD_MODEL_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph;  // made at the first run(): its constructor needs a GPU
#endif
};

DecodeGraph::DecodeGraph(torch::Device device, std::function<void()> step)
    : impl_(std::make_unique<Impl>(device, std::move(step))) {}

DecodeGraph::~DecodeGraph() = default;

void DecodeGraph::run() {
#ifdef LINEAR_ARD_MODEL_CUDA
  const c10::cuda::CUDAGuard device_guard(impl_->device);
  if (impl_->graph) {
    impl_->graph->replay();
    return;
  }
  const c10::cuda::CUDAStream current = c10::cuda::getCurrentCUDAStream();
  const c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
  at::cuda::CUDAEvent ready, done;
  ready.record(current);
  ready.block(side);
  {
    const c10::cuda::CUDAStreamGuard stream_guard(side);  // a capture needs a stream other than the default
    impl_->step();  // this run's step, for real; also the warm-up the capture needs
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    graph->capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
    impl_->step();  // recorded, not run
    graph->capture_end();
    impl_->graph = std::move(graph);
  }
  done.record(side);
  done.block(current);
#else
  impl_->step();
#endif
}

}  // namespace linear_ard::model
