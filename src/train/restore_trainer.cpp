// restore_trainer: a restore run: stage 1 (LinearARD, its ablations, or the CPT / LongReD baselines),
// optional stage 2 light CPT, checkpoints and resume, outputs (paper Sec. 3.2-3.4, Appendix B).
#include "linear_ard/train/restore_trainer.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/file_atomic.h"      // defines: file_write_atomic
#include "linear_ard/io/hf_config.h"        // defines: hf_config_from_json
#include "linear_ard/io/hf_folder.h"        // defines: hf_folder_load, hf_folder_save
#include "linear_ard/io/json_file.h"        // defines: json_file_write
#include "linear_ard/io/tokenizer.h"        // defines: tokenizer_load
#include "linear_ard/model/device_choice.h"  // defines: device_choice_resolve
#include "linear_ard/model/llama_model.h"   // defines: model_forward
#include "linear_ard/ops/relation_loss.h"   // defines: relation_loss
#include "linear_ard/train/lr_schedule.h"   // defines: lr_schedule_at
#include "linear_ard/train/block_mix.h"           // defines: block_mix, BlockMix, MixedBlock
#include "linear_ard/train/distributed.h"         // defines: Distributed
#include "linear_ard/train/gradient_buckets.h"    // defines: GradientBuckets
#include "linear_ard/train/metrics_log.h"   // defines: MetricsLog, memory_peak_bytes, progress_print
#include "linear_ard/train/pretrain_eval.h"       // defines: pretrain_evaluate
#include "linear_ard/train/pretrain_init.h"       // defines: pretrain_folder_init
#include "linear_ard/train/restore_checkpoint.h"  // defines: checkpoint_save, checkpoint_latest, checkpoint_restore
#include "linear_ard/train/restore_eval.h"        // defines: restore_evaluate
#include "linear_ard/train/restore_objective.h"   // defines: objective_ard, objective_lm, objective_longred
#include "linear_ard/train/restore_step.h"        // defines: restore_step, StageLoss
#include "linear_ard/train/text_blocks.h"         // defines: TextBlocks
#include "linear_ard/train/trainable_set.h"       // defines: TrainableSet

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

// The LM-loss weights [B, n] of a micro-batch (1 for blocks without weights); undefined when no
// block has any, so that objective_lm takes its plain mean.
torch::Tensor weights_tensor(const std::vector<MixedBlock>& blocks, const torch::Device& device) {
  if (std::all_of(blocks.begin(), blocks.end(), [](const MixedBlock& b) { return b.weights.empty(); })) return {};
  const auto n = static_cast<int64_t>(blocks.front().ids.size());
  auto weights = torch::ones({static_cast<int64_t>(blocks.size()), n}, torch::kFloat);
  for (size_t b = 0; b < blocks.size(); ++b)
    if (!blocks[b].weights.empty())
      weights[static_cast<int64_t>(b)].copy_(torch::tensor(blocks[b].weights));
  return weights.to(device);
}

// One stage's optimisation settings and loss (paper Eq. token_budget: L_s, B_s, A_s, U_s).
struct StageSpec {
  int64_t stage = 1;
  int64_t ctx_len = 0, batch_size = 1, grad_accum = 1, steps = 0, warmup_steps = 0;
  double lr = 0, min_lr_ratio = 0;
  StageLoss loss;
};

// metrics.jsonl records of a previous run up to `step` (a resumed run continues after them).
std::vector<json> metrics_read(const std::string& path, int64_t step) {
  std::vector<json> records;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json r = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (r.is_discarded()) break;  // a line cut short by the interruption
    if (r.value("step", int64_t{0}) <= step) records.push_back(std::move(r));
  }
  return records;
}

}  // namespace

void restore_run(const RestoreConfig& config, const SampleMaker& passkey_sample) {
  const auto run_start = Clock::now();
  RestoreConfig c = config;

  // Everything checkable is checked before the output folder exists.
  const model::DeviceChoice choice =
      model::device_choice_resolve(c.device, c.dtype, "config key 'device'", "config key 'dtype'");
  c.device = choice.device_name;
  c.dtype = choice.dtype_name;
  // Under torchrun (WORLD_SIZE > 1) this process is one rank of a data-parallel run: it reads its
  // shard of the blocks, gradients are averaged over the ranks, rank 0 alone writes (docs/multi-gpu.md).
  const std::unique_ptr<Distributed> dist = Distributed::from_env(choice.device);
  const bool main_rank = !dist || dist->is_main();
  const int64_t world = dist ? dist->world_size() : 1;  // the paper's G
  const torch::Device device = dist ? dist->device() : choice.device;
  const torch::ScalarType dtype = choice.dtype;

  // Pretraining: the "teacher" is a random model (pretrain_init) that keeps its native RoPE, and
  // every tensor trains with the LM loss; nothing reads the frozen copy but the saved dtypes.
  const bool pretrain = c.pretrain.enabled();
  const std::string tokenizer_folder = pretrain ? c.pretrain.tokenizer : c.teacher;
  if (!fs::is_directory(tokenizer_folder))
    throw std::invalid_argument(std::string("config key '") + (pretrain ? "pretrain.tokenizer" : "teacher") +
                                "': folder " + tokenizer_folder + " does not exist");
  io::HfFolder teacher = pretrain ? pretrain_folder_init(c.pretrain, *io::tokenizer_load(tokenizer_folder), c.seed)
                                  : io::hf_folder_load(c.teacher, /*load_weights=*/true);
  const model::ModelConfig& tc = teacher.model_config;
  const model::ModelConfig student_config = pretrain ? tc : student_config_make(teacher, c.student_rope);
  const BlockMix mix{c.pretrain.passkey_fraction, c.seed, c.pretrain.answer_weight, passkey_sample};
  if (mix.fraction > 0 && !mix.make)
    throw std::invalid_argument("config key 'pretrain.passkey_fraction': this command has no passkey sample maker (use linear-ard pretrain)");
  const int64_t native = tc.max_position_embeddings;
  const int64_t extended = student_config.max_position_embeddings;

  if (c.ctx_len == 0) c.ctx_len = native;
  if (c.method == "cpt") {
    if (c.ctx_len > extended)
      throw std::invalid_argument("config key 'ctx_len' (" + std::to_string(c.ctx_len) +
                                  ") exceeds the student's max_position_embeddings (" + std::to_string(extended) + ")");
  } else if (c.ctx_len > native) {
    throw std::invalid_argument("config key 'ctx_len' (" + std::to_string(c.ctx_len) +
                                ") exceeds the teacher's native max_position_embeddings (" + std::to_string(native) +
                                "): distillation runs within the teacher's native range");
  }
  if (c.method == "longred" && (c.ctx_len - 1) * c.longred_max_skip >= extended)
    throw std::invalid_argument("config key 'longred.max_skip' (" + std::to_string(c.longred_max_skip) +
                                ") sends position (ctx_len - 1) * max_skip past the student's max_position_embeddings (" +
                                std::to_string(extended) + ")");
  if (c.stage2.steps > 0) {
    if (c.stage2.ctx_len == 0) c.stage2.ctx_len = extended;
    if (c.stage2.ctx_len > extended)
      throw std::invalid_argument("config key 'stage2.ctx_len' (" + std::to_string(c.stage2.ctx_len) +
                                  ") exceeds the student's max_position_embeddings (" + std::to_string(extended) + ")");
  }
  const int64_t num_layers = tc.num_hidden_layers;
  const std::vector<int64_t> layers = restore_layers_resolve(c.layers, num_layers);
  // Only the layers up to the last distilled one can move its Q/K/V; every other objective reads
  // the whole model.
  const bool whole_model = c.method != "ard" || c.objective.logit_kl > 0 || c.stage2.steps > 0;
  const int64_t last_trainable_layer = whole_model ? num_layers - 1 : layers.back();

  const auto tokenizer = io::tokenizer_load(tokenizer_folder);
  if (tokenizer->vocab_size() > tc.vocab_size)
    throw std::invalid_argument("teacher " + c.teacher + ": tokenizer has " + std::to_string(tokenizer->vocab_size()) +
                                " ids but the model's vocab_size is " + std::to_string(tc.vocab_size));
  TextBlocks blocks1(c.data, *tokenizer, c.ctx_len, /*held_out=*/1, tc.vocab_size);
  // Stage 2 holds out as many of its blocks as cover the held-out evaluation block.
  std::optional<TextBlocks> blocks2;
  if (c.stage2.steps > 0)
    blocks2.emplace(c.data, *tokenizer, c.stage2.ctx_len, (c.ctx_len + c.stage2.ctx_len - 1) / c.stage2.ctx_len, tc.vocab_size);

  if (dist) {
    blocks1.shard(dist->rank(), world);
    if (blocks2) blocks2->shard(dist->rank(), world);
  }

  const fs::path out(c.output);
  const std::string config_yaml = restore_config_to_yaml(c);
  // Resuming checks that the checkpoint is this run's: every key but the ones about stopping.
  const auto resume_key = [](RestoreConfig r) {
    r.resume = false, r.stop_after_step = 0, r.overwrite = false;
    return restore_config_to_yaml(r);
  };
  std::optional<std::string> checkpoint = c.resume && main_rank ? checkpoint_latest(c.output) : std::nullopt;
  if (dist && c.resume) {
    const std::string chosen = dist->broadcast_string(checkpoint.value_or(""));
    if (!chosen.empty()) checkpoint = chosen;
  }
  std::optional<CheckpointState> resumed;
  std::vector<json> previous_records;
  if (checkpoint) {
    resumed = checkpoint_state_read(*checkpoint);
    if (resumed->config_yaml != resume_key(c))
      throw std::invalid_argument("config key 'resume': checkpoint " + *checkpoint +
                                  " was written by a run with another config (only resume, stop_after_step and "
                                  "overwrite may differ)");
    if (resumed->world_size != world)
      throw std::invalid_argument("config key 'resume': checkpoint " + *checkpoint + " was written by a run of " +
                                  std::to_string(resumed->world_size) + " process(es) and this run has " +
                                  std::to_string(world) + " (WORLD_SIZE): the data shards and the global batch "
                                  "depend on it; resume with the same number");
    previous_records = metrics_read((out / "metrics.jsonl").string(), resumed->step);
  }
  // Rank 0 alone writes; every rank learns whether it could before anyone goes on.
  std::optional<MetricsLog> metrics;
  const auto outputs_open = [&] {
    if (!main_rank) return;
    if (!checkpoint) output_prepare(c);
    io::file_write_atomic((out / "resolved_config.yaml").string(), config_yaml);
    metrics.emplace((out / "metrics.jsonl").string());
    for (const auto& r : previous_records) metrics->append(r);
  };
  if (dist) dist->run_agreed("preparing the output folder", outputs_open);
  else outputs_open();
  const auto metrics_append = [&](const json& record) {
    if (metrics) metrics->append(record);
  };
  torch::manual_seed(c.seed);

  // Shared frozen weights in the model dtype; `teacher.weights` keeps the checkpoint's own dtype
  // for saving.
  io::TensorMap model_tensors;
  for (const auto& [name, t] : teacher.weights) model_tensors[name] = t.to(device, dtype);
  const model::LlamaWeights weights = model::llama_weights_from_map(tc, std::move(model_tensors));
  const model::RopeTables teacher_rope = model::rope_tables_init(tc);
  const model::RopeTables student_rope = model::rope_tables_init(student_config);
  TrainableSet trainables(c.trainable, c.lora, teacher.weights, weights, last_trainable_layer, device);
  std::optional<GradientBuckets> gradients;
  if (dist) gradients.emplace(*dist, trainables.parameters());

  const ObjectiveContext ctx = objective_context_make(c, weights, teacher_rope, student_rope, layers);

  const torch::Tensor eval_ids = ids_tensor(blocks1.held_out(), device);
  const auto evaluate = [&](int64_t step) {
    if (pretrain) {
      const PretrainEval e = pretrain_evaluate(weights, student_rope, trainables.overrides(dtype, /*training=*/false), eval_ids);
      const json record = {{"step", step}, {"eval", true}, {"loss_lm", e.loss_lm}, {"perplexity", e.perplexity}};
      metrics_append(record);
      progress_break();
      std::printf("eval step %ld | held-out LM loss %.4f | perplexity %.2f\n", static_cast<long>(step), e.loss_lm, e.perplexity);
      std::fflush(stdout);
      return record;
    }
    const RestoreEval e = restore_evaluate(weights, teacher_rope, student_rope, trainables.overrides(dtype, /*training=*/false), eval_ids,
                                           layers, ctx.loss_options);
    json record = eval_json(e);
    record["step"] = step;
    record["eval"] = true;
    metrics_append(record);
    eval_print(step, e);
    return record;
  };
  std::string layer_text;
  for (int64_t l : layers) layer_text += (layer_text.empty() ? "" : ",") + std::to_string(l);
  if (pretrain)
    std::printf("pretrain: random %ld-layer model (hidden %ld, native context %ld, vocab %ld) -> %s: %ld parameters, %s %s\n",
                static_cast<long>(num_layers), static_cast<long>(tc.hidden_size), static_cast<long>(native),
                static_cast<long>(tc.vocab_size), c.output.c_str(), static_cast<long>(trainables.parameter_count()),
                c.device.c_str(), c.dtype.c_str());
  else
    std::printf("restore: %s -> %s (%s x%g), method %s, layers %s, trainable %s: %ld parameters in %zu tensors, %s %s\n",
                c.teacher.c_str(), c.output.c_str(), model::rope_type_name(student_config.rope.type),
                student_config.rope.factor.value_or(1.0), c.method.c_str(), layer_text.c_str(), c.trainable.c_str(),
                static_cast<long>(trainables.parameter_count()), trainables.names().size(), c.device.c_str(),
                c.dtype.c_str());
  json eval_before;
  for (const auto& r : previous_records)
    if (r.value("eval", false) && r.at("step").get<int64_t>() == 0) eval_before = r;
  if (!resumed) eval_before = evaluate(0);
  json eval_after = eval_before;

  // The LM-loss weights of the micro-batch next_batch drew last (block_mix's; undefined: plain
  // mean): restore_step draws each micro-batch before it calls the loss on it.
  torch::Tensor batch_weights;
  std::vector<StageSpec> stages;
  StageSpec s1{1, c.ctx_len, c.batch_size, c.grad_accum, c.steps, c.warmup_steps, c.lr, c.min_lr_ratio, {}};
  if (c.method == "ard") s1.loss = [&](const model::Overrides& o, const torch::Tensor& ids) { return objective_ard(ctx, o, ids); };
  else if (c.method == "cpt")
    s1.loss = [&](const model::Overrides& o, const torch::Tensor& ids) { return objective_lm(ctx, o, ids, batch_weights); };
  else s1.loss = [&](const model::Overrides& o, const torch::Tensor& ids) { return objective_longred(ctx, o, ids); };
  stages.push_back(s1);
  if (c.stage2.steps > 0)
    stages.push_back({2, c.stage2.ctx_len, c.stage2.batch_size, c.stage2.grad_accum, c.stage2.steps,
                      c.stage2.warmup_steps, c.stage2.lr, c.stage2.min_lr_ratio,
                      [&](const model::Overrides& o, const torch::Tensor& ids) { return objective_lm(ctx, o, ids); }});
  const int64_t total_steps = c.steps + (c.stage2.steps > 0 ? c.stage2.steps : 0);

  int64_t tokens = resumed ? resumed->tokens : 0;
  double train_s = resumed ? resumed->train_s : 0;
  int64_t step_offset = 0;
  for (const StageSpec& stage : stages) {
    TextBlocks& blocks = stage.stage == 1 ? blocks1 : *blocks2;
    torch::optim::AdamW optimizer(trainables.parameters(), torch::optim::AdamWOptions(stage.lr).weight_decay(c.weight_decay));
    int64_t first = 1;
    if (resumed && resumed->stage > stage.stage) {
      step_offset += stage.steps;
      continue;
    }
    if (resumed && resumed->stage == stage.stage) {
      checkpoint_restore(*checkpoint, trainables, optimizer);
      for (int64_t i = 0; i < resumed->blocks_consumed; ++i) blocks.next();
      first = resumed->stage_step + 1;
      std::printf("restore: resumed from %s (step %ld)\n", checkpoint->c_str(), static_cast<long>(resumed->step));
    }
    const LrSchedule schedule{stage.lr, stage.warmup_steps, stage.steps, stage.min_lr_ratio};
    const int64_t tokens_per_step = stage.ctx_len * stage.batch_size * stage.grad_accum * world;
    for (int64_t step = first; step <= stage.steps; ++step) {
      const int64_t global = step_offset + step;
      const auto t0 = Clock::now();
      const double lr = lr_schedule_at(schedule, step - 1);
      int64_t drawn = (step - 1) * stage.batch_size * stage.grad_accum;  // the stage's block index (block_mix)
      const auto next_batch = [&] {
        std::vector<MixedBlock> mixed;
        for (int64_t b = 0; b < stage.batch_size; ++b)
          mixed.push_back(block_mix(blocks.next(), drawn++, stage.stage == 1 ? mix : BlockMix{}, *tokenizer));
        batch_weights = weights_tensor(mixed, device);
        std::vector<std::vector<int32_t>> batch;
        for (MixedBlock& m : mixed) batch.push_back(std::move(m.ids));
        return ids_tensor(batch, device);
      };
      const StepResult result = restore_step(stage.loss, trainables, optimizer, next_batch,
                                             {stage.grad_accum, lr, c.clip_grad_norm, dtype, global,
                                              gradients ? &*gradients : nullptr});

      const double step_s = seconds_since(t0);
      train_s += step_s;
      tokens += tokens_per_step;
      json record = {{"step", global}, {"stage", stage.stage}, {"loss", result.loss}};
      for (const auto& [k, v] : result.parts) record[k] = v;
      record.update({{"lr", lr},
                     {"grad_norm", result.grad_norm},
                     {"tokens", tokens},
                     {"tokens_per_s", static_cast<double>(tokens_per_step) / step_s},
                     {"step_time_s", step_s},
                     {"peak_memory_bytes", memory_peak_bytes(device)}});
      metrics_append(record);
      if (global % c.log_every == 0 || global == total_steps) {
        const double eta = train_s / static_cast<double>(global) * static_cast<double>(total_steps - global);
        progress_print(global, total_steps, result.loss, lr, static_cast<double>(tokens_per_step) / step_s, eta);
      }
      if (step == stage.steps || (c.eval_every > 0 && global % c.eval_every == 0)) eval_after = evaluate(global);
      const bool stop = global == c.stop_after_step;
      // Every rank holds the same trainables, optimizer and generator state; rank 0 writes them.
      if (main_rank && (stop || (c.checkpoint_every > 0 && global % c.checkpoint_every == 0))) {
        checkpoint_save(c.output,
                        {global, stage.stage, step, step * stage.batch_size * stage.grad_accum, tokens, train_s,
                         world, resume_key(c)},
                        trainables, optimizer);
      }
      if (stop) {
        progress_break();
        std::printf("restore: stopped after step %ld (stop_after_step); resume=true continues from %s\n",
                    static_cast<long>(global), (out / ("checkpoint-" + std::to_string(global))).c_str());
        return;
      }
    }
    step_offset += stage.steps;
  }
  if (!main_rank) return;

  // The restored folder: the checkpoint's tensors with the trained ones (LoRA merged) in its dtype,
  // the student's RoPE in config.json, the teacher's tokenizer and generation config.
  io::HfFolder restored = teacher;
  restored.path.clear();
  restored.model_config = student_config;
  restored.weights = trainables.merged(teacher.weights);
  const std::string model_dir = (out / "model").string();
  io::hf_folder_save(model_dir, restored);
  if (c.save_adapters) {
    // PEFT builds the adapters' base from base_model_name_or_path: it must carry the student's
    // RoPE, so scaled/ (the teacher's weights under the student's config) is written and named.
    io::HfFolder scaled = teacher;
    scaled.path.clear();
    scaled.model_config = student_config;
    io::hf_folder_save((out / "scaled").string(), scaled);
    // Written beside, then renamed: the adapters folder appears whole or not at all.
    const fs::path adapters = out / "adapters", tmp = out / "adapters.tmp";
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    trainables.adapters_save(tmp.string(), fs::absolute(out / "scaled").lexically_normal().string());
    fs::remove_all(adapters);
    fs::rename(tmp, adapters);
  }

  const double wall_s = seconds_since(run_start);
  json budget_stages = json::array();
  int64_t budget = 0;
  for (const StageSpec& stage : stages) {
    const int64_t n = stage.ctx_len * stage.batch_size * stage.grad_accum * stage.steps * world;
    budget += n;
    budget_stages.push_back({{"stage", stage.stage}, {"L", stage.ctx_len}, {"B", stage.batch_size},
                             {"A", stage.grad_accum}, {"U", stage.steps}, {"G", world}, {"tokens", n}});
  }
  json summary = {
      {"token_budget", {{"formula", "N_tok = sum_s L_s * B_s * A_s * U_s * G"}, {"stages", budget_stages}, {"tokens", budget}}},
      {"tokens_trained", tokens},
      {"held_out_tokens", eval_ids.numel()},
      {"data_passes_completed", blocks1.passes()},
      {"steps", total_steps},
      {"method", c.method},
      {"layers", layers},
      {"train_time_s", train_s},
      {"wall_time_s", wall_s},
      {"mean_tokens_per_s", static_cast<double>(tokens) / train_s},
      {"peak_memory_bytes", memory_peak_bytes(device)},
      {"device", c.device},
      {"dtype", c.dtype},
      {"trainable", c.trainable},
      {"trainable_parameters", trainables.parameter_count()},
      {"trainable_tensors", trainables.names()},
      {"teacher", c.teacher},
      {"teacher_max_position_embeddings", native},
      {"student_rope", c.student_rope},
      {"student_max_position_embeddings", extended},
      {"eval_before", eval_before},
      {"eval_after", eval_after},
      {"model", model_dir}};
  io::json_file_write((out / "training_summary.json").string(), summary);
  if (pretrain)
    std::printf("pretrain: held-out LM loss %.4f -> %.4f (perplexity %.2f -> %.2f)\n", eval_before.value("loss_lm", 0.0),
                eval_after.value("loss_lm", 0.0), eval_before.value("perplexity", 0.0), eval_after.value("perplexity", 0.0));
  else
    std::printf("restore: relation loss %.4f -> %.4f, logit KL %.4f -> %.4f, attention KL %.4f -> %.4f\n",
                eval_before.value("relation_loss", 0.0), eval_after.value("relation_loss", 0.0),
                eval_before.value("logit_kl", 0.0), eval_after.value("logit_kl", 0.0),
                eval_before.value("attention_kl", 0.0), eval_after.value("attention_kl", 0.0));
  std::printf("%s: %ld tokens in %.1f s (%.0f tok/s); model written to %s\n", pretrain ? "pretrain" : "restore",
              static_cast<long>(tokens), train_s, static_cast<double>(tokens) / train_s, model_dir.c_str());
}

}  // namespace linear_ard::train
