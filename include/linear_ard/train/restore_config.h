// RestoreConfig: every setting of `linear-ard restore` (and `linear-ard pretrain`), read from YAML
// plus `key=value` overrides, validated with errors naming the key, and written back (defaults
// filled in) as resolved YAML. One field table in restore_config_fields.cpp defines each key once: its
// parser, its YAML emitter, the unknown-key errors and the docs' key list (restore_config_keys).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/io/text_dataset.h"  // defines: TextSource
#include "linear_ard/train/config_names.h"
#include "linear_ard/train/pretrain_config.h"

namespace linear_ard::train {

// `method`: what stage 1 optimises.
enum class Method {
  kArd,      // LinearARD: Q/Q, K/K, V/V relation distillation
  kCpt,      // next-token loss of the student only
  kLongred,  // LongReD-style hidden-state cosine
};
template <>
struct NameTable<Method> {
  static constexpr std::pair<Method, const char*> entries[] = {
      {Method::kArd, "ard"}, {Method::kCpt, "cpt"}, {Method::kLongred, "longred"}};
};

// `trainable`: what the optimizer updates on top of the frozen checkpoint.
enum class Trainable { kQkv, kLoraQkv, kLoraAll, kFull };
template <>
struct NameTable<Trainable> {
  static constexpr std::pair<Trainable, const char*> entries[] = {
      {Trainable::kQkv, "qkv"}, {Trainable::kLoraQkv, "lora_qkv"}, {Trainable::kLoraAll, "lora_all"},
      {Trainable::kFull, "full"}};
};
inline bool trainable_is_lora(Trainable t) { return t == Trainable::kLoraQkv || t == Trainable::kLoraAll; }

// `objective.relations`: qkv: Q/Q, K/K, V/V; attention: attention map (Q,K) + V/V.
enum class Relations { kQkv, kAttention };
template <>
struct NameTable<Relations> {
  static constexpr std::pair<Relations, const char*> entries[] = {{Relations::kQkv, "qkv"},
                                                                  {Relations::kAttention, "attention"}};
};

// `device`: auto is cuda when a CUDA device is available, else cpu.
enum class RunDevice { kAuto, kCpu, kCuda };
template <>
struct NameTable<RunDevice> {
  static constexpr std::pair<RunDevice, const char*> entries[] = {
      {RunDevice::kAuto, "auto"}, {RunDevice::kCpu, "cpu"}, {RunDevice::kCuda, "cuda"}};
};

// `dtype`: auto is bf16 on cuda, fp32 on cpu.
enum class RunDtype { kAuto, kFp32, kBf16 };
template <>
struct NameTable<RunDtype> {
  static constexpr std::pair<RunDtype, const char*> entries[] = {
      {RunDtype::kAuto, "auto"}, {RunDtype::kFp32, "fp32"}, {RunDtype::kBf16, "bf16"}};
};

// `select.criterion`: which evaluated checkpoint a run writes as its model.
enum class Select {
  kKlPasskey,  // lowest val_kl among those whose passkey_mean is within passkey_margin of the best seen
  kKl,         // lowest val_kl
  kLast,       // the last one (the weights after the last step)
};
template <>
struct NameTable<Select> {
  static constexpr std::pair<Select, const char*> entries[] = {
      {Select::kKlPasskey, "kl_passkey"}, {Select::kKl, "kl"}, {Select::kLast, "last"}};
};

// Passkey retrieval in the run's validation, `val_passkey.*`.
struct ValPasskeyConfig {
  std::vector<int64_t> lengths;  // empty: the target length of every stage (native; stage 2's ctx_len)
  int64_t samples = 20;          // prompts per length, spread over the depths; 0: no passkey
  std::vector<double> depths = {0.0, 0.25, 0.5, 0.75, 1.0};
};

// `select.*`.
struct SelectConfig {
  Select criterion = Select::kKlPasskey;
  double passkey_margin = 0.1;
};

// What stage 1 optimises (paper Sec. 3.4 and Appendix D), `objective.*`.
struct ObjectiveConfig {
  Relations relations = Relations::kQkv;
  double logit_kl = 0.0;          // weight of KL(softmax(z_t/T) || softmax(z_s/T)); 0: off
  double temperature = 1.0;       // T of the logit KL
  int64_t last_k_positions = 0;   // logit KL over the last k positions of a block; 0: all
};

// LoRA adapters (trainable: lora_qkv | lora_all), `lora.*`: scale = alpha / rank as in PEFT.
struct LoraConfig {
  int64_t rank = 8;
  double alpha = 16.0;
  double dropout = 0.0;  // PEFT's lora_dropout: on the adapter branch's input, training only
};

// Optional stage 2, light CPT (next-token loss) under the scaled RoPE, `stage2.*`; steps 0: off.
struct Stage2Config {
  int64_t steps = 0;
  int64_t ctx_len = 0;  // 0: the student's max_position_embeddings (may exceed the native range)
  int64_t batch_size = 1;
  int64_t grad_accum = 1;
  double lr = 2e-5;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;
  std::vector<io::TextSource> data;  // empty: the stage-1 data stream, continued where stage 1 stopped
};

// Members in the order of the field table; each key's meaning is its doc line there
// (`linear-ard restore --list-keys`, docs/restore.md).
struct RestoreConfig {
  std::string recipe;                // a bundled preset (configs/recipes/<name>.yaml) under the file's keys
  std::string teacher;
  nlohmann::json student_rope;       // HF rope dict, e.g. {rope_type: linear, factor: 8}
  std::vector<io::TextSource> data;  // each file with the key of its text in JSON records
  Method method = Method::kArd;
  nlohmann::json layers = "last:1";  // "last:k", "all" or a list of layer indices
  ObjectiveConfig objective;
  Trainable trainable = Trainable::kQkv;
  LoraConfig lora;
  bool save_adapters = false;
  int64_t longred_max_skip = 1;
  std::vector<io::TextSource> val_data;  // empty: the validation blocks are held out from `data`
  int64_t val_blocks = 16;
  int64_t val_ctx_len = 0;           // 0: ctx_len, at most the teacher's native length
  ValPasskeyConfig val_passkey;
  SelectConfig select;
  Stage2Config stage2;
  int64_t ctx_len = 0;               // 0: the teacher's max_position_embeddings
  int64_t batch_size = 1;
  int64_t grad_accum = 1;
  int64_t steps = 100;
  double lr = 2e-5;
  int64_t warmup_steps = 0;
  double min_lr_ratio = 0.1;
  double weight_decay = 0.0;
  double clip_grad_norm = 5.0;
  double divergence_factor = 100.0;  // a step loss above this x its stage's first loss stops the run
  double lambda_q = 1.0;
  double lambda_k = 1.0;
  double lambda_v = 1.0;
  uint64_t seed = 0;
  int64_t data_shuffle = 1024;  // blocks in the data's shuffle buffer (0: the files' order)
  bool deterministic = false;
  RunDevice device = RunDevice::kAuto;
  RunDtype dtype = RunDtype::kAuto;
  int64_t checkpoint_layers = 0;  // the student's layers recomputed, from the first (model::kRecomputeAll: all)
  bool overlap_teacher = true;
  std::string output;
  bool overwrite = false;
  int64_t eval_every = 0;
  int64_t log_every = 1;
  bool tensorboard = true;           // OUT/tensorboard/ events from metrics.jsonl (the CLI's follower)
  int64_t checkpoint_every = 0;
  bool resume = false;
  int64_t stop_after_step = 0;
  int64_t profile_steps = 0;         // profile/ of steps 2..1+N (train/step_profile.h)
  PretrainConfig pretrain;           // `linear-ard pretrain`: a random model instead of a teacher
};

// Reads YAML `path`, applies `overrides` ("key=value", dotted keys for nested maps such as
// student_rope.factor=4; values are parsed as YAML so lists and numbers keep their type) and
// validates. Throws std::invalid_argument naming the key or file at fault: unknown keys (nested
// ones too, student_rope's against the keys transformers accepts for its rope_type), a key given
// twice (with its lines) or under two spellings (HF-style aliases such as learning_rate for lr).
RestoreConfig restore_config_load(const std::string& path, const std::vector<std::string>& overrides = {});

// The config as YAML with every key present: what `resolved_config.yaml` holds.
std::string restore_config_to_yaml(const RestoreConfig& config);

// One key of the field table, for the docs: dotted key, its alias (or empty), default as YAML, doc.
struct ConfigKeyDoc {
  std::string key, alias, default_yaml, doc;
};
std::vector<ConfigKeyDoc> restore_config_keys();
// The key table as Markdown (docs/restore.md holds it; `linear-ard restore --list-keys` prints it).
std::string restore_config_keys_markdown();

// The layer indices (ascending, non-negative) that config key `layers` names for a model with
// `num_layers` layers; throws std::invalid_argument naming the key when one is out of range.
std::vector<int64_t> restore_layers_resolve(const nlohmann::json& layers, int64_t num_layers);

// The bundled recipes (`recipe`): name -> YAML text of configs/recipes/<name>.yaml, compiled in.
const std::map<std::string, std::string>& restore_recipes();

}  // namespace linear_ard::train
