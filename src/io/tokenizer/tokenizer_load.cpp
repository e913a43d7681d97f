// tokenizer_load: picks the tokenizer of a HuggingFace model folder.
#include <filesystem>
#include <stdexcept>

#include "linear_ard/io/tokenizer.h"
#include "linear_ard/io/tokenizer_bpe.h"
#include "linear_ard/io/tokenizer_sentencepiece.h"

namespace linear_ard::io {

std::unique_ptr<Tokenizer> tokenizer_load(const std::string& folder) {
  const std::filesystem::path dir(folder);
  const auto config = dir / "tokenizer_config.json";
  const std::string config_path = std::filesystem::exists(config) ? config.string() : "";
  // tokenizer.json is what transformers' fast tokenizers (the default) read when both exist.
  if (std::filesystem::exists(dir / "tokenizer.json")) {
    return std::make_unique<BpeTokenizer>((dir / "tokenizer.json").string(), config_path);
  }
  if (std::filesystem::exists(dir / "tokenizer.model")) {
    return std::make_unique<SentencePieceTokenizer>((dir / "tokenizer.model").string(), config_path);
  }
  throw std::runtime_error(folder + ": neither tokenizer.json nor tokenizer.model found");
}

}  // namespace linear_ard::io
