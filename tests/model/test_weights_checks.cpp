// The checks made before a model's weights are used: parameter counts that cannot overflow, the
// lazy config-vs-weights comparison and the tensors the config has no place for, the memory fit,
// F16/BF16 bytes under the other header, and the finite check of placed weights.
#include <gtest/gtest.h>

#include <chrono>

#include "linear_ard/model/llama_weights.h"
#include "linear_ard/model/memory_fit.h"
#include "linear_ard/model/weights_dtype_check.h"
#include "linear_ard/model/weights_place.h"
#include "tiny_config.h"  // defines: tiny_config

namespace {

using namespace linear_ard::model;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(WeightsChecks, ParameterCountOfAbsurdSizesIsANumber) {
  ModelConfig c = tiny_config();
  const double three_layers = model_config_param_count(c);
  c.num_hidden_layers = 1'000'000'000'000;
  // Two untied embeddings, the final norm and per-layer parameters: linear in the layers, no overflow.
  const double layer = (three_layers - 2 * 97 * 48 - 48) / 3;
  const double expected = 2 * 97 * 48 + 48 + 1e12 * layer;
  EXPECT_NEAR(model_config_param_count(c), expected, expected * 1e-12);
  c.hidden_size = c.intermediate_size = int64_t{1} << 40;
  EXPECT_GT(model_config_param_count(c), 1e30);  // past int64, still ordered
}

TEST(WeightsChecks, MismatchIsFoundWithoutEnumeratingAClaimedTrillionLayers) {
  const LlamaWeights w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 0);
  std::map<std::string, torch::Tensor> tensors = w.tensors;
  EXPECT_FALSE(llama_weights_mismatch(w.config, tensors));
  ModelConfig huge = w.config;
  huge.num_hidden_layers = 1'000'000'000'000;
  const auto start = std::chrono::steady_clock::now();
  const auto missing = llama_weights_mismatch(huge, tensors);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  ASSERT_TRUE(missing);
  EXPECT_EQ(missing->tensor, "model.layers.3.input_layernorm.weight");
  EXPECT_EQ(missing->message, "missing tensor model.layers.3.input_layernorm.weight");
  tensors["model.layers.1.mlp.up_proj.weight"] = torch::zeros({80, 47});
  const auto shape = llama_weights_mismatch(w.config, tensors);
  ASSERT_TRUE(shape);
  EXPECT_EQ(shape->message, "model.layers.1.mlp.up_proj.weight has shape [80, 47], config implies [80, 48]");
  EXPECT_NE(error_of([&] { llama_weights_from_map(w.config, tensors); }).find("checkpoint: " + shape->message),
            std::string::npos);
}

TEST(WeightsChecks, MemoryFitNamesTheNumbers) {
  EXPECT_GT(memory_available(torch::kCPU), 0);
  EXPECT_NO_THROW(memory_fit_check(1000, torch::kBFloat16, torch::kCPU, "tiny"));
  const std::string e = error_of([] { memory_fit_check(3.2e15, torch::kBFloat16, torch::kCPU, "config.json: x=1"); });
  EXPECT_NE(e.find("config.json: x=1 gives 3.2e+15 parameters (5.68 PiB in BFloat16), more than the "), std::string::npos) << e;
  EXPECT_NE(e.find("of memory available on cpu"), std::string::npos) << e;
  EXPECT_EQ(memory_bytes_text(512), "512 bytes");
  EXPECT_EQ(memory_bytes_text(1.5 * 1024 * 1024 * 1024), "1.5 GiB");
  // A random init of an absurd shape is refused before a single tensor is drawn.
  ModelConfig huge = tiny_config();
  huge.num_hidden_layers = 1'000'000'000'000;
  EXPECT_NE(error_of([&] { llama_weights_random(huge, torch::kFloat, torch::kCPU, 0); })
                .find("num_hidden_layers=1000000000000"),
            std::string::npos);
}

TEST(WeightsChecks, PlaceListsEveryNonFiniteTensorWithItsCounts) {
  std::map<std::string, torch::Tensor> tensors{{"a", torch::ones({4, 4})}, {"b", torch::ones({8})},
                                               {"c", torch::ones({3})}, {"d", torch::ones({2})}};
  EXPECT_EQ(weights_place(tensors, torch::kCPU, torch::kBFloat16, "m", "use").at("a").scalar_type(), torch::kBFloat16);
  tensors["a"][1][2] = std::nan("");
  tensors["a"][3][3] = -INFINITY;
  tensors["b"][0] = INFINITY;
  tensors["c"][0] = 1e5;  // finite in fp32, beyond fp16's 65504
  const std::string e = error_of([&] { weights_place(tensors, torch::kCPU, torch::kHalf, "model x", "evaluate"); });
  EXPECT_EQ(e, "model x has non-finite weights: a (1 NaN, 1 Inf of 16 values), b (0 NaN, 1 Inf of 8 values), "
               "c (finite as stored, 1 value overflows fp16); refusing to evaluate them");
}

TEST(WeightsChecks, TensorsTheConfigHasNoPlaceForAreNamed) {
  const LlamaWeights w = llama_weights_random(tiny_config(), torch::kFloat, torch::kCPU, 0);  // 3 layers
  std::map<std::string, torch::Tensor> tensors = w.tensors;
  // What transformers ignores too: an old checkpoint's RoPE buffer.
  tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch::ones({6});
  EXPECT_FALSE(llama_weights_mismatch(w.config, tensors));
  tensors["model.layers.3.mlp.up_proj.weight"] = torch::zeros({80, 48});
  const auto extra = llama_weights_mismatch(w.config, tensors);
  ASSERT_TRUE(extra);
  EXPECT_EQ(extra->tensor, "model.layers.3.mlp.up_proj.weight");
  EXPECT_EQ(extra->message, "model.layers.3.mlp.up_proj.weight belongs to layer 3, but num_hidden_layers=3 gives "
                            "layers 0 to 2: the weights hold more layers than the config");
  EXPECT_NE(error_of([&] { llama_weights_from_map(w.config, tensors); }).find("checkpoint: " + extra->message),
            std::string::npos);
  tensors.erase("model.layers.3.mlp.up_proj.weight");
  tensors["model.layers.1.self_attn.q_norm.weight"] = torch::ones({12});  // Qwen3's, not in this layout
  const auto foreign = llama_weights_mismatch(w.config, tensors);
  ASSERT_TRUE(foreign);
  EXPECT_EQ(foreign->message, "unexpected tensor model.layers.1.self_attn.q_norm.weight: no tensor of that name is "
                              "part of a llama model (LLaMA-family layout)");
  tensors.erase("model.layers.1.self_attn.q_norm.weight");
  tensors["model.layers.99999999999999999999999.mlp.up_proj.weight"] = torch::zeros({1});
  EXPECT_TRUE(llama_weights_mismatch(w.config, tensors));
}

// Random matrices shaped like trained weights (std 0.02, 1, and 90 % zeros), in each 16-bit dtype.
std::map<std::string, torch::Tensor> plausible_matrices(torch::ScalarType dtype) {
  torch::manual_seed(3);
  auto sparse = torch::randn({96, 64}) * torch::rand({96, 64}).lt(0.1);
  return {{"small", (torch::randn({256, 96}) * 0.02).to(dtype)},
          {"unit", torch::randn({128, 64}).to(dtype)},
          {"sparse", sparse.to(dtype)},
          {"zeros", torch::zeros({64, 64}, dtype)},
          {"vector", torch::ones({4096}, dtype)}};
}

TEST(WeightsChecks, SixteenBitBytesUnderTheOtherHeaderAreRefusedNamingBoth) {
  for (const auto dtype : {torch::kHalf, torch::kBFloat16}) {
    std::map<std::string, torch::Tensor> tensors = plausible_matrices(dtype);
    EXPECT_FALSE(weights_dtype_swapped(tensors)) << *weights_dtype_swapped(tensors);
    EXPECT_NO_THROW(weights_place(tensors, torch::kCPU, torch::kFloat, "m", "use"));
    // The bytes of one format under the other's header: same sizes, other values.
    const auto other = dtype == torch::kHalf ? torch::kBFloat16 : torch::kHalf;
    tensors["small"] = tensors["small"].view(other);
    const auto swapped = weights_dtype_swapped(tensors);
    ASSERT_TRUE(swapped);
    const std::string stored = dtype == torch::kHalf ? "BF16" : "F16", real = dtype == torch::kHalf ? "F16" : "BF16";
    EXPECT_NE(swapped->find("tensor small is stored as " + stored + ", but its values read so have RMS"),
              std::string::npos) << *swapped;
    const std::string article = stored == "F16" ? "an " : "a ";
    EXPECT_NE(swapped->find("(" + real + " data under " + article + stored + " header)"), std::string::npos) << *swapped;
    EXPECT_NE(error_of([&] { weights_place(tensors, torch::kCPU, torch::kFloat, "model x", "evaluate"); })
                  .find("model x: tensor small is stored as " + stored),
              std::string::npos);
  }
}

TEST(WeightsChecks, MemoryPlanSumsItsPartsAndRefusesNamingThem) {
  const ModelConfig c = tiny_config();
  // The estimates' arithmetic: KV cache 2 x layers x kv_heads x head_dim x positions x bytes.
  EXPECT_DOUBLE_EQ(memory_kv_cache_bytes(c, 100, torch::kFloat, /*cpu=*/false), 2.0 * 3 * 2 * 12 * 100 * 4);
  EXPECT_DOUBLE_EQ(memory_kv_cache_bytes(c, 100, torch::kFloat, /*cpu=*/true), 2.0 * 4 * 2 * 12 * 100 * 4);
  EXPECT_DOUBLE_EQ(memory_logits_bytes(c, 10), 3.0 * 10 * 97 * 4);
  // 6 h + 2 (q + 2 kv) + 3 q + 4 f with h = 48, q = 48, kv = 24, f = 80.
  EXPECT_DOUBLE_EQ(memory_layer_elements(c), 6 * 48 + 2 * (48 + 48) + 3 * 48 + 4 * 80);
  EXPECT_DOUBLE_EQ(memory_backward_bytes(c, 10, 3, torch::kBFloat16), 10.0 * 3 * memory_layer_elements(c) * 2);
  MemoryPlan plan{"eval x at length 7", {{"weights", 1024}, {"KV cache", 2048}, {"prompts", 10, /*host=*/true}}};
  const std::string fits = memory_plan_check(plan, torch::kCPU);
  EXPECT_EQ(fits.rfind("eval x at length 7 needs an estimated 3.01 KiB (weights 1 KiB + KV cache 2 KiB + prompts 10 bytes "
                       "(host)) of the ", 0), 0u) << fits;
  plan.parts.push_back({"prefill", 1e18});
  const std::string e = error_of([&] { memory_plan_check(plan, torch::kCPU); });
  EXPECT_NE(e.find("eval x at length 7 needs an estimated 888 PiB (weights 1 KiB + KV cache 2 KiB + prompts 10 bytes "
                   "(host) + prefill 888 PiB), more than the "), std::string::npos) << e;
  EXPECT_NE(e.find(" of memory available on cpu"), std::string::npos) << e;
}

}  // namespace
