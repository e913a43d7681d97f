// checkpoint: atomic checkpoint folders and resume.
#include "linear_ard/train/checkpoint.h"

#include <filesystem>
#include <mutex>
#include <stdexcept>

#include <ATen/CPUGeneratorImpl.h>
#include <nlohmann/json.hpp>

#include "linear_ard/io/json_file.h"    // defines: json_file_read, json_file_write
#include "linear_ard/io/safetensors.h"  // defines: safetensors_load, safetensors_save

namespace linear_ard::train {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPrefix = "checkpoint-";

// The step of a complete checkpoint folder name, or -1.
int64_t folder_step(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return -1;
  const std::string digits = name.substr(std::string(kPrefix).size());
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

// The generators a run draws from, by name: torch's CPU one (LoRA init, LongReD skips, LoRA
// dropout on CPU) and, where CUDA is available, the current CUDA device's (LoRA dropout on CUDA).
std::vector<std::pair<std::string, at::Generator>> generators() {
  std::vector<std::pair<std::string, at::Generator>> out{{"cpu", at::detail::getDefaultCPUGenerator()}};
  if (torch::cuda::is_available()) out.emplace_back("cuda", at::globalContext().defaultGenerator(at::Device(at::kCUDA)));
  return out;
}

}  // namespace

void checkpoint_save(const std::string& output, const CheckpointState& state, const TrainableSet& trainables,
                     torch::optim::Optimizer& optimizer) {
  const fs::path final_dir = fs::path(output) / (kPrefix + std::to_string(state.step));
  const fs::path tmp = fs::path(final_dir.string() + ".tmp");
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  io::safetensors_save((tmp / "trainable.safetensors").string(), trainables.state());
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  archive.save_to((tmp / "optimizer.pt").string());
  io::TensorMap rng;
  for (auto& [name, generator] : generators()) {
    std::lock_guard<std::mutex> lock(generator.mutex());
    rng[name] = generator.get_state();
  }
  io::safetensors_save((tmp / "rng.safetensors").string(), rng);
  io::json_file_write((tmp / "state.json").string(),
                      {{"step", state.step}, {"stage", state.stage}, {"stage_step", state.stage_step},
                       {"blocks_consumed", state.blocks_consumed}, {"tokens", state.tokens},
                       {"train_s", state.train_s}, {"world_size", state.world_size},
                       {"config_yaml", state.config_yaml}});
  fs::remove_all(final_dir);
  fs::rename(tmp, final_dir);
}

void checkpoint_prune(const std::string& output, int64_t keep_step) {
  std::vector<fs::path> older;
  for (const auto& entry : fs::directory_iterator(output)) {
    const int64_t s = folder_step(entry.path().filename().string());
    if (s >= 0 && s != keep_step) older.push_back(entry.path());
  }
  for (const auto& p : older) fs::remove_all(p);
}

void checkpoint_remove(const std::string& output, int64_t step) {
  fs::remove_all(fs::path(output) / (kPrefix + std::to_string(step)));
}

std::optional<std::string> checkpoint_latest(const std::string& output) {
  if (!fs::is_directory(output)) return std::nullopt;
  std::optional<std::string> best;
  int64_t best_step = -1;
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(output)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kPrefix, 0) == 0 && name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0) {
      stale.push_back(entry.path());
      continue;
    }
    const int64_t s = folder_step(name);
    if (s > best_step) best_step = s, best = entry.path().string();
  }
  for (const auto& p : stale) fs::remove_all(p);
  return best;
}

CheckpointState checkpoint_state_read(const std::string& folder) {
  const nlohmann::json j = io::json_file_read((fs::path(folder) / "state.json").string());
  CheckpointState s;
  s.step = j.at("step").get<int64_t>();
  s.stage = j.at("stage").get<int64_t>();
  s.stage_step = j.at("stage_step").get<int64_t>();
  s.blocks_consumed = j.at("blocks_consumed").get<int64_t>();
  s.tokens = j.at("tokens").get<int64_t>();
  s.train_s = j.at("train_s").get<double>();
  s.world_size = j.value("world_size", int64_t{1});  // checkpoints from before multi-process runs
  s.config_yaml = j.at("config_yaml").get<std::string>();
  return s;
}

void checkpoint_restore(const std::string& folder, TrainableSet& trainables, torch::optim::Optimizer& optimizer) {
  const fs::path dir(folder);
  trainables.state_load(io::safetensors_load((dir / "trainable.safetensors").string()));
  torch::serialize::InputArchive archive;
  archive.load_from((dir / "optimizer.pt").string());
  optimizer.load(archive);
  const io::TensorMap rng = io::safetensors_load((dir / "rng.safetensors").string());
  for (auto& [name, generator] : generators()) {
    const auto it = rng.find(name);
    // A checkpoint written where CUDA was not available drew nothing from a CUDA generator.
    if (it == rng.end() && name == "cuda") continue;
    if (it == rng.end()) throw std::runtime_error("checkpoint " + folder + " has no state of the " + name + " generator");
    std::lock_guard<std::mutex> lock(generator.mutex());
    generator.set_state(it->second.clone());
  }
}

}  // namespace linear_ard::train
