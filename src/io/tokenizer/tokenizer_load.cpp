// tokenizer_load: picks the tokenizer of a HuggingFace model folder.
#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/tokenizer.h"
#include "linear_ard/io/tokenizer_bpe.h"
#include "linear_ard/io/tokenizer_sentencepiece.h"

namespace linear_ard::io {

std::string tokenizer_file(const std::string& folder) {
  const std::filesystem::path dir(folder);
  // tokenizer.json is what transformers' fast tokenizers (the default) read when both exist.
  for (const char* name : {"tokenizer.json", "tokenizer.model"})
    if (std::filesystem::exists(dir / name)) return (dir / name).string();
  throw std::runtime_error(folder + ": neither tokenizer.json nor tokenizer.model found");
}

std::unique_ptr<Tokenizer> tokenizer_load(const std::string& folder) {
  const auto config = std::filesystem::path(folder) / "tokenizer_config.json";
  const std::string config_path = std::filesystem::exists(config) ? config.string() : "";
  const std::string file = tokenizer_file(folder);
  if (std::filesystem::path(file).filename() == "tokenizer.json") return std::make_unique<BpeTokenizer>(file, config_path);
  return std::make_unique<SentencePieceTokenizer>(file, config_path);
}

}  // namespace linear_ard::io
