// run_batches: host blocks to device tensors, and the stage's micro-batch source.
#include "run_batches.h"

#include <algorithm>

namespace linear_ard::train {
namespace {

// A host tensor on `device`; pageable copies to a GPU would wait for the stream.
torch::Tensor host_to_device(const torch::Tensor& host, const torch::Device& device) {
  if (!device.is_cuda()) return host.to(device);
  return host.pin_memory().to(device, /*non_blocking=*/true);
}

// The LM-loss weights [B, n] of a micro-batch (1 for blocks without weights); undefined when no
// block has any, so that objective_lm takes its plain mean.
torch::Tensor weights_tensor(const std::vector<MixedBlock>& blocks, const torch::Device& device) {
  if (std::all_of(blocks.begin(), blocks.end(), [](const MixedBlock& b) { return b.weights.empty(); })) return {};
  const auto n = static_cast<int64_t>(blocks.front().ids.size());
  auto weights = torch::ones({static_cast<int64_t>(blocks.size()), n}, torch::kFloat);
  for (size_t b = 0; b < blocks.size(); ++b)
    if (!blocks[b].weights.empty())
      weights[static_cast<int64_t>(b)].copy_(torch::tensor(blocks[b].weights));
  return host_to_device(weights, device);
}

}  // namespace

torch::Tensor ids_tensor(const std::vector<std::vector<int32_t>>& blocks, const torch::Device& device) {
  const auto n = static_cast<int64_t>(blocks.front().size());
  auto ids = torch::empty({static_cast<int64_t>(blocks.size()), n}, torch::kLong);
  auto* p = ids.data_ptr<int64_t>();
  for (const auto& b : blocks)
    for (int32_t id : b) *p++ = id;
  return host_to_device(ids, device);
}

std::function<torch::Tensor()> batch_source(const StageSpec& stage, const io::Tokenizer& tokenizer,
                                            const torch::Device& device, torch::Tensor& batch_weights, int64_t& drawn) {
  return [&stage, &tokenizer, device, &batch_weights, &drawn] {
    std::vector<MixedBlock> mixed;
    for (int64_t b = 0; b < stage.batch_size; ++b)
      mixed.push_back(block_mix(stage.blocks->next(), drawn++, stage.mix, tokenizer));
    batch_weights = weights_tensor(mixed, device);
    std::vector<std::vector<int32_t>> batch;
    for (MixedBlock& m : mixed) batch.push_back(std::move(m.ids));
    return ids_tensor(batch, device);
  };
}

}  // namespace linear_ard::train
