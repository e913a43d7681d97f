// objective_context_make: the run's settings reach the objectives. Each setting the context carries
// is set to a value other than its default in the config and read back from the context (the
// `deterministic` flag once failed to reach the relation losses, so a deterministic run still
// accumulated their gradients with atomics on CUDA).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "../model/tiny_config.h"                // defines: tiny_config
#include "linear_ard/model/llama_weights.h"      // defines: llama_weights_random
#include "linear_ard/model/rope.h"               // defines: rope_tables_init
#include "linear_ard/train/restore_config.h"     // defines: RestoreConfig
#include "linear_ard/train/restore_objective.h"  // defines: objective_context_make

namespace {

using namespace linear_ard;

TEST(ObjectiveContext, CarriesTheConfigsSettings) {
  const model::ModelConfig mc = model::tiny_config();
  const model::LlamaWeights weights = model::llama_weights_random(mc, torch::kFloat, torch::kCPU, /*seed=*/1, 0.1);
  const model::RopeTables rope = model::rope_tables_init(mc);
  for (const bool flag : {true, false}) {
    train::RestoreConfig c;
    c.deterministic = flag;
    c.checkpoint_layers = flag ? 0 : 3;
    c.overlap_teacher = flag;
    c.lambda_q = 0.25;
    c.lambda_k = 0.5;
    c.lambda_v = 2.0;
    c.longred_max_skip = 7;
    const train::ObjectiveContext ctx = train::objective_context_make(c, weights, rope, rope, {0, 2});
    EXPECT_EQ(ctx.loss_options.deterministic, flag);
    EXPECT_EQ(ctx.recompute_layers, flag ? 0 : 3);
    EXPECT_EQ(ctx.overlap_teacher, flag);
    EXPECT_TRUE(ctx.loss_options.causal);
    EXPECT_DOUBLE_EQ(ctx.loss_options.lambda_q, 0.25);
    EXPECT_DOUBLE_EQ(ctx.loss_options.lambda_k, 0.5);
    EXPECT_DOUBLE_EQ(ctx.loss_options.lambda_v, 2.0);
    EXPECT_EQ(ctx.longred_max_skip, 7);
    EXPECT_EQ(ctx.layers, (std::vector<int64_t>{0, 2}));
  }
}

}  // namespace
