// restore_trainer: stage-1 relation distillation of a RoPE-scaled student (paper Sec. 3.2-3.4).
#include "linear_ard/train/restore_trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "linear_ard/io/file_atomic.h"      // defines: file_write_atomic
#include "linear_ard/io/hf_config.h"        // defines: hf_config_from_json
#include "linear_ard/io/hf_folder.h"        // defines: hf_folder_load, hf_folder_save
#include "linear_ard/io/json_file.h"        // defines: json_file_write
#include "linear_ard/io/tokenizer.h"        // defines: tokenizer_load
#include "linear_ard/model/llama_model.h"   // defines: model_forward
#include "linear_ard/ops/relation_loss.h"   // defines: relation_loss
#include "linear_ard/train/lr_schedule.h"   // defines: lr_schedule_at
#include "linear_ard/train/metrics_log.h"   // defines: MetricsLog, memory_peak_bytes, progress_print
#include "linear_ard/train/restore_eval.h"  // defines: restore_evaluate
#include "linear_ard/train/text_blocks.h"   // defines: TextBlocks

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The student's config.json: the teacher's with the requested rope_scaling and, as HF expects for a
// scaled model, max_position_embeddings = native x factor. The rope dict names the native length
// as original_max_position_embeddings (yarn, llama3 and longrope compute with it; for linear it
// records what was scaled); dynamic NTK keeps the native max_position_embeddings, its threshold.
model::ModelConfig student_config_make(const io::HfFolder& teacher, const json& student_rope) {
  const model::ModelConfig& t = teacher.model_config;
  json rope = student_rope;
  const std::string type_name = rope.contains("rope_type") ? rope["rope_type"].get<std::string>()
                                                           : rope["type"].get<std::string>();
  model::RopeType type;
  try {
    type = model::rope_type_from_name(type_name);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config key 'student_rope': ") + e.what());
  }
  if (type == model::RopeType::kDefault)
    throw std::invalid_argument("config key 'student_rope': rope_type default is the teacher's own RoPE; nothing to restore");
  if (!rope.contains("factor") || !rope["factor"].is_number())
    throw std::invalid_argument("config key 'student_rope': needs a numeric factor (the context extension ratio)");
  const double factor = rope["factor"].get<double>();
  if (!rope.contains("original_max_position_embeddings"))
    rope["original_max_position_embeddings"] = t.max_position_embeddings;

  json j = teacher.config;
  j.erase("rope_parameters");
  j["rope_theta"] = t.rope.theta;
  if (t.rope.partial_rotary_factor) j["partial_rotary_factor"] = *t.rope.partial_rotary_factor;
  j["rope_scaling"] = rope;
  if (type != model::RopeType::kDynamic)
    j["max_position_embeddings"] = static_cast<int64_t>(std::llround(t.max_position_embeddings * factor));
  try {
    return io::hf_config_from_json(j);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("config key 'student_rope': ") + e.what());
  }
}

// Refuses to clobber anything but a previous run's folder (it holds resolved_config.yaml).
void output_prepare(const RestoreConfig& c) {
  const fs::path out(c.output);
  if (fs::exists(out)) {
    if (!fs::is_directory(out)) throw std::invalid_argument("output " + c.output + " exists and is not a folder");
    if (!fs::is_empty(out)) {
      if (!c.overwrite)
        throw std::invalid_argument("output " + c.output + " exists and is not empty (set overwrite=true to replace a previous run)");
      if (!fs::exists(out / "resolved_config.yaml"))
        throw std::invalid_argument("output " + c.output + " is not a previous restore run's folder (no resolved_config.yaml); refusing to overwrite it");
      fs::remove_all(out);
    }
  }
  fs::create_directories(out);
}

json eval_json(const RestoreEval& e) {
  return {{"relation_loss", e.relation_loss}, {"loss_q", e.loss_q}, {"loss_k", e.loss_k},
          {"loss_v", e.loss_v}, {"logit_kl", e.logit_kl}, {"attention_kl", e.attention_kl}};
}

void eval_print(int64_t step, const RestoreEval& e) {
  progress_break();
  std::printf("eval step %ld | relation loss %.4f (q %.4f k %.4f v %.4f) | logit KL %.4f | attention KL %.4f\n",
              static_cast<long>(step), e.relation_loss, e.loss_q, e.loss_k, e.loss_v, e.logit_kl, e.attention_kl);
  std::fflush(stdout);
}

torch::Tensor ids_tensor(const std::vector<std::vector<int32_t>>& blocks, const torch::Device& device) {
  const auto n = static_cast<int64_t>(blocks.front().size());
  auto ids = torch::empty({static_cast<int64_t>(blocks.size()), n}, torch::kLong);
  auto* p = ids.data_ptr<int64_t>();
  for (const auto& b : blocks)
    for (int32_t id : b) *p++ = id;
  return ids.to(device);
}

}  // namespace

void restore_run(const RestoreConfig& config) {
  const auto run_start = Clock::now();
  RestoreConfig c = config;

  // Everything checkable is checked before the output folder exists.
  if (c.device == "auto") c.device = torch::cuda::is_available() ? "cuda" : "cpu";
  if (c.device == "cuda" && !torch::cuda::is_available())
    throw std::invalid_argument("config key 'device' is cuda but no CUDA device is available");
  if (c.dtype == "auto") c.dtype = c.device == "cuda" ? "bf16" : "fp32";
  const torch::Device device(c.device == "cuda" ? torch::kCUDA : torch::kCPU);
  const torch::ScalarType dtype = c.dtype == "bf16" ? torch::kBFloat16 : torch::kFloat;

  if (!fs::is_directory(c.teacher))
    throw std::invalid_argument("config key 'teacher': folder " + c.teacher + " does not exist");
  io::HfFolder teacher = io::hf_folder_load(c.teacher, /*load_weights=*/true);
  const model::ModelConfig& tc = teacher.model_config;
  const model::ModelConfig student_config = student_config_make(teacher, c.student_rope);

  if (c.ctx_len == 0) c.ctx_len = tc.max_position_embeddings;
  if (c.ctx_len > tc.max_position_embeddings)
    throw std::invalid_argument("config key 'ctx_len' (" + std::to_string(c.ctx_len) +
                                ") exceeds the teacher's native max_position_embeddings (" +
                                std::to_string(tc.max_position_embeddings) +
                                "): relation distillation runs within the teacher's native range");
  const int64_t layers = tc.num_hidden_layers;
  if (c.distill_layer < -layers || c.distill_layer >= layers)
    throw std::invalid_argument("config key 'distill_layer' (" + std::to_string(c.distill_layer) +
                                ") is outside the teacher's " + std::to_string(layers) + " layers");
  const int64_t layer = c.distill_layer < 0 ? c.distill_layer + layers : c.distill_layer;

  const auto tokenizer = io::tokenizer_load(c.teacher);
  if (tokenizer->vocab_size() > tc.vocab_size)
    throw std::invalid_argument("teacher " + c.teacher + ": tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                                " ids but the model's vocab_size is " + std::to_string(tc.vocab_size));
  TextBlocks blocks(c.data, *tokenizer, c.ctx_len, /*held_out=*/1);

  output_prepare(c);
  const fs::path out(c.output);
  io::file_write_atomic((out / "resolved_config.yaml").string(), restore_config_to_yaml(c));
  MetricsLog metrics((out / "metrics.jsonl").string());
  torch::manual_seed(c.seed);

  // Shared frozen weights in the model dtype; `teacher.weights` keeps the checkpoint's own dtype
  // for saving.
  io::TensorMap model_tensors;
  for (const auto& [name, t] : teacher.weights) model_tensors[name] = t.to(device, dtype);
  const model::LlamaWeights weights = model::llama_weights_from_map(tc, std::move(model_tensors));
  const model::RopeTables teacher_rope = model::rope_tables_init(tc);
  const model::RopeTables student_rope = model::rope_tables_init(student_config);

  // Trainable: fp32 master copies of Q/K/V (weights and biases) of layers 0..distill_layer; the
  // layers above cannot influence the distilled layer's Q/K/V.
  std::vector<std::string> names;
  std::vector<torch::Tensor> masters;
  int64_t trainable_params = 0;
  for (int64_t l = 0; l <= layer; ++l) {
    for (const char* proj : {"q_proj", "k_proj", "v_proj"}) {
      for (const char* part : {"weight", "bias"}) {
        const std::string name = "model.layers." + std::to_string(l) + ".self_attn." + proj + "." + part;
        const auto it = teacher.weights.find(name);
        if (it == teacher.weights.end()) continue;
        names.push_back(name);
        masters.push_back(it->second.to(device, torch::kFloat).clone().set_requires_grad(true));
        trainable_params += it->second.numel();
      }
    }
  }
  const auto student_overrides = [&] {
    model::Overrides o;
    for (size_t i = 0; i < names.size(); ++i) o.replace[names[i]] = masters[i].to(dtype);
    return o;
  };
  torch::optim::AdamW optimizer(masters, torch::optim::AdamWOptions(c.lr).weight_decay(c.weight_decay));
  const LrSchedule schedule{c.lr, c.warmup_steps, c.steps, c.min_lr_ratio};
  ops::RelationLossOptions loss_options;
  loss_options.causal = true;
  loss_options.lambda_q = c.lambda_q;
  loss_options.lambda_k = c.lambda_k;
  loss_options.lambda_v = c.lambda_v;

  const torch::Tensor eval_ids = ids_tensor(blocks.held_out(), device);
  const auto evaluate = [&](int64_t step) {
    const RestoreEval e = restore_evaluate(weights, teacher_rope, student_rope, student_overrides(),
                                           eval_ids, layer, loss_options);
    json record = eval_json(e);
    record["step"] = step;
    record["eval"] = true;
    metrics.append(record);
    eval_print(step, e);
    return e;
  };
  std::printf("restore: %s -> %s (%s x%g), layer %ld, %ld trainable parameters in %zu tensors, %s %s\n",
              c.teacher.c_str(), c.output.c_str(), model::rope_type_name(student_config.rope.type),
              student_config.rope.factor.value_or(1.0), static_cast<long>(layer),
              static_cast<long>(trainable_params), names.size(), c.device.c_str(), c.dtype.c_str());
  const RestoreEval eval_before = evaluate(0);
  RestoreEval eval_after = eval_before;

  const int64_t tokens_per_step = c.ctx_len * c.batch_size * c.grad_accum;
  int64_t tokens = 0;
  double train_s = 0;
  for (int64_t step = 1; step <= c.steps; ++step) {
    const auto t0 = Clock::now();
    const double lr = lr_schedule_at(schedule, step - 1);
    for (auto& group : optimizer.param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
    optimizer.zero_grad();
    double loss_sum = 0;
    torch::Tensor relation_sum = torch::zeros({3}, torch::kDouble);
    for (int64_t a = 0; a < c.grad_accum; ++a) {
      std::vector<std::vector<int32_t>> batch;
      for (int64_t b = 0; b < c.batch_size; ++b) batch.push_back(blocks.next());
      const torch::Tensor ids = ids_tensor(batch, device);
      model::ForwardOptions options;
      options.stop_after_qkv_layer = layer;
      model::ModelOutputs t;
      {
        torch::NoGradGuard no_grad;
        t = model::model_forward(weights, teacher_rope, model::Overrides{}, ids, options);
      }
      options.checkpoint_layers = c.checkpoint_layers;
      const model::ModelOutputs s = model::model_forward(weights, student_rope, student_overrides(), ids, options);
      const model::LayerQkv& tq = t.qkv.at(layer);
      const model::LayerQkv& sq = s.qkv.at(layer);
      const ops::RelationLoss loss = ops::relation_loss({sq.q, sq.k, sq.v}, {tq.q, tq.k, tq.v}, loss_options);
      const double value = loss.total.item<double>();
      const torch::Tensor per = loss.relation_losses.detach().to(torch::kCPU, torch::kDouble);
      if (!std::isfinite(value))
        throw std::runtime_error("step " + std::to_string(step) + ": loss is " + std::to_string(value) +
                                 " (L_q " + std::to_string(per[0].item<double>()) + ", L_k " +
                                 std::to_string(per[1].item<double>()) + ", L_v " + std::to_string(per[2].item<double>()) +
                                 "); stopped before this step's update (try dtype=fp32 or a lower lr)");
      (loss.total / static_cast<double>(c.grad_accum)).backward();
      loss_sum += value;
      relation_sum += per;
    }
    // clip_grad_norm_ returns the norm before clipping; an infinite max norm measures without clipping.
    const double max_norm = c.clip_grad_norm > 0 ? c.clip_grad_norm : std::numeric_limits<double>::infinity();
    const double grad_norm = torch::nn::utils::clip_grad_norm_(masters, max_norm);
    if (!std::isfinite(grad_norm))
      throw std::runtime_error("step " + std::to_string(step) + ": gradient norm is " + std::to_string(grad_norm) +
                               "; stopped before this step's update (try dtype=fp32 or a lower lr)");
    optimizer.step();

    const double step_s = seconds_since(t0);
    train_s += step_s;
    tokens += tokens_per_step;
    const double loss_mean = loss_sum / static_cast<double>(c.grad_accum);
    relation_sum /= static_cast<double>(c.grad_accum);
    metrics.append({{"step", step},
                    {"loss", loss_mean},
                    {"loss_q", relation_sum[0].item<double>()},
                    {"loss_k", relation_sum[1].item<double>()},
                    {"loss_v", relation_sum[2].item<double>()},
                    {"lr", lr},
                    {"grad_norm", grad_norm},
                    {"tokens", tokens},
                    {"tokens_per_s", static_cast<double>(tokens_per_step) / step_s},
                    {"step_time_s", step_s},
                    {"peak_memory_bytes", memory_peak_bytes(device)}});
    if (step % c.log_every == 0 || step == c.steps) {
      const double eta = train_s / static_cast<double>(step) * static_cast<double>(c.steps - step);
      progress_print(step, c.steps, loss_mean, lr, static_cast<double>(tokens_per_step) / step_s, eta);
    }
    if (step == c.steps || (c.eval_every > 0 && step % c.eval_every == 0)) eval_after = evaluate(step);
  }

  // The restored folder: the checkpoint's tensors, trained Q/K/V cast back to its dtype, the
  // student's RoPE in config.json, the teacher's tokenizer and generation config.
  io::HfFolder restored = teacher;
  restored.path.clear();
  restored.model_config = student_config;
  for (size_t i = 0; i < names.size(); ++i) {
    const torch::Tensor& original = teacher.weights.at(names[i]);
    restored.weights[names[i]] = masters[i].detach().to(torch::kCPU, original.scalar_type()).contiguous();
  }
  const std::string model_dir = (out / "model").string();
  io::hf_folder_save(model_dir, restored);

  const double wall_s = seconds_since(run_start);
  json summary = {
      {"token_budget",
       {{"formula", "N_tok = L * B * A * U * G (paper Appendix B)"},
        {"L", c.ctx_len}, {"B", c.batch_size}, {"A", c.grad_accum}, {"U", c.steps}, {"G", 1},
        {"tokens", c.ctx_len * c.batch_size * c.grad_accum * c.steps}}},
      {"tokens_trained", tokens},
      {"held_out_tokens", eval_ids.numel()},
      {"data_passes_completed", blocks.passes()},
      {"steps", c.steps},
      {"train_time_s", train_s},
      {"wall_time_s", wall_s},
      {"mean_tokens_per_s", static_cast<double>(tokens) / train_s},
      {"peak_memory_bytes", memory_peak_bytes(device)},
      {"device", c.device},
      {"dtype", c.dtype},
      {"distill_layer", layer},
      {"trainable_parameters", trainable_params},
      {"trainable_tensors", names},
      {"teacher", c.teacher},
      {"teacher_max_position_embeddings", tc.max_position_embeddings},
      {"student_rope", c.student_rope},
      {"student_max_position_embeddings", student_config.max_position_embeddings},
      {"eval_before", eval_json(eval_before)},
      {"eval_after", eval_json(eval_after)},
      {"model", model_dir}};
  io::json_file_write((out / "training_summary.json").string(), summary);
  std::printf("restore: relation loss %.4f -> %.4f, logit KL %.4f -> %.4f, attention KL %.4f -> %.4f\n"
              "restore: %ld tokens in %.1f s (%.0f tok/s); model written to %s\n",
              eval_before.relation_loss, eval_after.relation_loss, eval_before.logit_kl, eval_after.logit_kl,
              eval_before.attention_kl, eval_after.attention_kl, static_cast<long>(tokens), train_s,
              static_cast<double>(tokens) / train_s, model_dir.c_str());
}

}  // namespace linear_ard::train
