// run_memory_plan: what the plan counts for activation recomputation. checkpoint_layers N keeps the
// input of each of the first N layers and one recomputed layer's activations, and every activation
// of the other layers; 0 and `true` are the two ends.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "../model/tiny_config.h"             // defines: tiny_config
#include "linear_ard/model/llama_model.h"     // defines: kRecomputeAll
#include "linear_ard/model/memory_fit.h"      // defines: memory_backward_bytes
#include "linear_ard/train/restore_config.h"  // defines: RestoreConfig
#include "run_memory.h"                       // defines: run_memory_plan

namespace {

using namespace linear_ard;

// The plan's "activations kept for backward" part of stage 1, in bytes.
double kept_bytes(const model::ModelConfig& m, int64_t checkpoint_layers) {
  train::RestoreConfig c;
  c.ctx_len = 1000;
  c.checkpoint_layers = checkpoint_layers;
  const model::MemoryPlan plan = train::run_memory_plan(c, m, torch::kBFloat16, m.num_hidden_layers - 1, "restore");
  for (const model::MemoryPart& p : plan.parts)
    if (p.what.rfind("activations kept for backward", 0) == 0) return p.bytes;
  ADD_FAILURE() << "no activations part in the plan";
  return 0;
}

TEST(RunMemory, CheckpointLayersCountsRecomputedAndStoredLayers) {
  model::ModelConfig m = model::tiny_config();
  m.num_hidden_layers = 7;
  const double tokens = 1000, size = 2, h = static_cast<double>(m.hidden_size);
  const double layer = model::memory_backward_bytes(m, tokens, 1, torch::kBFloat16);
  EXPECT_DOUBLE_EQ(kept_bytes(m, 0), 7 * layer);
  EXPECT_DOUBLE_EQ(kept_bytes(m, 3), tokens * 3 * h * size + (4 + 1) * layer);
  EXPECT_DOUBLE_EQ(kept_bytes(m, model::kRecomputeAll), tokens * 7 * h * size + layer);
  EXPECT_DOUBLE_EQ(kept_bytes(m, 7), kept_bytes(m, model::kRecomputeAll));
  EXPECT_DOUBLE_EQ(kept_bytes(m, 50), kept_bytes(m, model::kRecomputeAll));
  for (int64_t n = 1; n < 7; ++n) EXPECT_LT(kept_bytes(m, n + 1), kept_bytes(m, n)) << n;
}

}  // namespace
