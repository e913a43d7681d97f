// model_dump: runs the C++ model on a HuggingFace folder and writes what the parity test compares
// (RoPE inv_freq, logits, hidden states, post-RoPE Q/K/V, greedy generation, early-stop Q/K/V, recomputed vs
// plain gradients) to one safetensors file.
//
//   model_dump MODEL_DIR OUT.safetensors --ids "1 2 3,4 5 6" [--mask "1 1 0,1 1 1"]
//              [--qkv-layers 0,2] [--dtype float32|bfloat16|float16] [--device cpu|cuda]
//              [--generate N] [--stop-after L] [--grad-check] [--write-config OUT_DIR]
//              [--student-rope JSON] [--save-folder OUT_DIR]
// --write-config writes hf_config_to_json(config.json) to OUT_DIR/config.json, for checking that
// transformers reads our legacy form with the same RoPE. --student-rope runs the folder's weights
// under the student config rope_compose makes of the folder's and that rope dict (what restore
// trains), and --write-config then writes that config. --save-folder writes the folder as loaded
// back with hf_folder_save (what restore writes: fused tensors joined again for Phi-3).
#include <cstdlib>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "linear_ard/io/hf_config.h"      // hf_config_to_json, hf_rope_dict_from_json
#include "linear_ard/io/hf_folder.h"      // hf_folder_load
#include "linear_ard/io/json_file.h"      // json_file_write
#include "linear_ard/io/safetensors.h"    // safetensors_save
#include "linear_ard/model/generate.h"    // model_generate_greedy
#include "linear_ard/model/llama_model.h"  // model_forward
#include "linear_ard/model/rope_compose.h"  // rope_compose

namespace {

using namespace linear_ard;

// "1 2 3,4 5 6" -> [[1,2,3],[4,5,6]]
torch::Tensor parse_rows(const std::string& text) {
  std::vector<std::vector<int64_t>> rows;
  std::stringstream all(text);
  std::string row;
  while (std::getline(all, row, ',')) {
    std::stringstream r(row);
    rows.emplace_back();
    for (int64_t v; r >> v;) rows.back().push_back(v);
  }
  auto out = torch::empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows.at(0).size())},
                          torch::kLong);
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != rows[0].size()) throw std::invalid_argument("rows differ in length");
    for (size_t j = 0; j < rows[i].size(); ++j) out[i][j] = rows[i][j];
  }
  return out;
}

std::vector<int64_t> parse_list(const std::string& text) {
  std::vector<int64_t> out;
  std::stringstream s(text);
  for (std::string item; std::getline(s, item, ',');) out.push_back(std::stoll(item));
  return out;
}

torch::ScalarType parse_dtype(const std::string& name) {
  if (name == "float32") return torch::kFloat;
  if (name == "bfloat16") return torch::kBFloat16;
  if (name == "float16") return torch::kHalf;
  throw std::invalid_argument("unknown dtype " + name);
}

// Gradients of a fixed random projection of the logits with respect to trainable copies of a few
// weights, with and without activation recomputation.
void dump_gradients(const model::LlamaWeights& weights, const model::RopeTables& rope,
                    const torch::Tensor& ids, io::TensorMap& out) {
  const int64_t last = weights.config.num_hidden_layers - 1;
  const std::vector<std::string> names{"model.layers.0.self_attn.q_proj.weight",
                                       "model.layers." + std::to_string(last) + ".mlp.down_proj.weight",
                                       "model.layers.0.input_layernorm.weight"};
  for (bool recompute : {false, true}) {
    model::Overrides overrides;
    for (const auto& name : names)
      overrides.replace[name] = weights.tensors.at(name).clone().requires_grad_(true);
    model::ForwardOptions options;
    options.recompute_layers = recompute ? model::kRecomputeAll : 0;
    auto logits = model::model_forward(weights, rope, overrides, ids, options).logits;
    torch::manual_seed(7);
    auto probe = torch::randn(logits.sizes(), logits.options());
    (logits * probe).sum().backward();
    for (const auto& name : names)
      out[std::string(recompute ? "grad.recompute." : "grad.plain.") + name] =
          overrides.replace[name].grad();
  }
}

struct Args {
  std::string folder, out_path;
  std::string ids_text, mask_text, layers_text, dtype_name = "float32", device_name = "cpu";
  std::string config_out, student_rope, save_folder;
  int64_t generate = 0;
  std::optional<int64_t> stop_after;
  bool grad_check = false;
};

Args args_parse(int argc, char** argv) {
  Args a{argv[1], argv[2]};
  for (int i = 3; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(arg + " needs a value");
      return argv[++i];
    };
    if (arg == "--ids") a.ids_text = value();
    else if (arg == "--mask") a.mask_text = value();
    else if (arg == "--qkv-layers") a.layers_text = value();
    else if (arg == "--dtype") a.dtype_name = value();
    else if (arg == "--device") a.device_name = value();
    else if (arg == "--generate") a.generate = std::stoll(value());
    else if (arg == "--stop-after") a.stop_after = std::stoll(value());
    else if (arg == "--grad-check") a.grad_check = true;
    else if (arg == "--write-config") a.config_out = value();
    else if (arg == "--student-rope") a.student_rope = value();
    else if (arg == "--save-folder") a.save_folder = value();
    else throw std::invalid_argument("unknown argument " + arg);
  }
  return a;
}

// The folder's weights in the requested device and dtype, under the student RoPE when one is given;
// writes the config and a copy of the folder on request.
model::LlamaWeights weights_load(const Args& a, const torch::Device& device) {
  io::HfFolder hf = io::hf_folder_load(a.folder, /*load_weights=*/true);
  const model::ModelConfig config =
      a.student_rope.empty() ? hf.model_config
                             : model::rope_compose(hf.model_config, io::hf_rope_dict_from_json(
                                                                        nlohmann::json::parse(a.student_rope), hf.model_config.rope));
  if (!a.config_out.empty())
    io::json_file_write(a.config_out + "/config.json", io::hf_config_to_json(config, hf.config));
  if (!a.save_folder.empty()) io::hf_folder_save(a.save_folder, hf);
  io::TensorMap tensors = std::move(hf.weights);
  const auto dtype = parse_dtype(a.dtype_name);
  for (auto& [name, t] : tensors) t = t.to(device, dtype);
  return model::llama_weights_from_map(config, std::move(tensors));
}

// Logits, hidden states, the captured Q/K/V, and (with stop_after) the early-stopped forward's Q/K/V.
void dump_forward(const model::LlamaWeights& weights, const model::RopeTables& rope, const torch::Tensor& ids,
                  const model::ForwardOptions& options, std::optional<int64_t> stop_after, io::TensorMap& out) {
  torch::NoGradGuard no_grad;
  const model::Overrides none;
  auto result = model::model_forward(weights, rope, none, ids, options);
  out["logits"] = result.logits;
  for (size_t i = 0; i < result.hidden_states.size(); ++i)
    out["hidden_states." + std::to_string(i)] = result.hidden_states[i];
  for (const auto& [layer, qkv] : result.qkv) {
    out["q." + std::to_string(layer)] = qkv.q;
    out["k." + std::to_string(layer)] = qkv.k;
    out["v." + std::to_string(layer)] = qkv.v;
  }
  if (!stop_after) return;
  model::ForwardOptions stop = options;
  stop.stop_after_qkv_layer = stop_after;
  stop.capture_qkv_layers.clear();
  stop.output_hidden_states = false;
  auto early = model::model_forward(weights, rope, none, ids, stop);
  const int64_t layer = early.qkv.begin()->first;
  out["stop.q." + std::to_string(layer)] = early.qkv.at(layer).q;
  out["stop.k." + std::to_string(layer)] = early.qkv.at(layer).k;
  out["stop.v." + std::to_string(layer)] = early.qkv.at(layer).v;
}

int run(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: model_dump MODEL_DIR OUT.safetensors --ids ROWS [options]\n";
    return 2;
  }
  const Args a = args_parse(argc, argv);
  const torch::Device device(a.device_name);
  const model::LlamaWeights weights = weights_load(a, device);
  const model::ModelConfig& config = weights.config;
  const model::RopeTables rope = model::rope_tables_init(config);

  auto ids = parse_rows(a.ids_text).to(device);
  model::ForwardOptions options;
  options.output_hidden_states = true;
  if (!a.mask_text.empty()) options.attention_mask = parse_rows(a.mask_text).to(device);
  if (!a.layers_text.empty()) options.capture_qkv_layers = parse_list(a.layers_text);

  io::TensorMap out;
  // The frequencies HF's rotary module holds after a forward over these positions.
  const auto freqs = model::rope_frequencies(config, config.rope, ids.size(1));
  out["rope.inv_freq"] = freqs.inv_freq;
  out["rope.attention_scaling"] = torch::tensor({freqs.attention_scaling}, torch::kDouble);
  dump_forward(weights, rope, ids, options, a.stop_after, out);
  if (a.generate > 0) {
    model::GenerateOptions g;
    g.max_new_tokens = a.generate;
    out["generated"] = model::model_generate_greedy(weights, rope, model::Overrides{}, ids, g);
  }
  if (a.grad_check) dump_gradients(weights, rope, ids, out);
  for (auto& [name, t] : out) t = t.to(torch::kCPU).contiguous();
  io::safetensors_save(a.out_path, out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "model_dump: " << e.what() << "\n";
    return 1;
  }
}
