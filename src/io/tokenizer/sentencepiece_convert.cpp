// sentencepiece_convert: a SentencePiece BPE model as an HF tokenizer.json (vocab, merges, pipeline).
#include <sentencepiece_processor.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "linear_ard/io/tokenizer_train.h"

namespace linear_ard::io {

namespace {

using nlohmann::json;

bool piece_special(const sentencepiece::SentencePieceProcessor& sp, int id) {
  return sp.IsControl(id) || sp.IsUnknown(id);
}

// SentencePiece BPE merges the adjacent pair whose union scores highest; HF BPE the pair of lowest
// rank. Ranking every (left, right) split of a piece by the piece's score (ties: piece id, then the
// parts' ids, as transformers' SentencePieceExtractor orders them) makes the two agree.
json merges_of(const sentencepiece::SentencePieceProcessor& sp, const std::unordered_map<std::string, int>& ids) {
  const auto ordinary = [&](const std::string& piece) {
    const auto it = ids.find(piece);
    return it != ids.end() && !piece_special(sp, it->second) && !sp.IsByte(it->second);
  };
  std::vector<std::tuple<float, int, int, int, std::string, std::string>> merges;
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    if (piece_special(sp, id) || sp.IsByte(id)) continue;
    const std::string piece = sp.IdToPiece(id);
    for (size_t k = 1; k < piece.size(); ++k) {
      if ((static_cast<unsigned char>(piece[k]) & 0xC0) == 0x80) continue;  // inside a UTF-8 character
      const std::string left = piece.substr(0, k), right = piece.substr(k);
      if (ordinary(left) && ordinary(right))
        merges.emplace_back(-sp.GetScore(id), id, ids.at(left), ids.at(right), left, right);
    }
  }
  std::sort(merges.begin(), merges.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a), std::get<2>(a), std::get<3>(a)) <
           std::tie(std::get<0>(b), std::get<1>(b), std::get<2>(b), std::get<3>(b));
  });
  json merge_list = json::array();
  for (const auto& m : merges) merge_list.push_back({std::get<4>(m), std::get<5>(m)});
  return merge_list;
}

// TemplateProcessing that prepends BOS (null without one).
json post_processor_of(const sentencepiece::SentencePieceProcessor& sp) {
  if (sp.bos_id() < 0) return nullptr;
  const std::string bos = sp.IdToPiece(sp.bos_id());
  if (bos.empty()) return nullptr;
  const json s = {{"SpecialToken", {{"id", bos}, {"type_id", 0}}}};
  return {{"type", "TemplateProcessing"},
          {"single", {s, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
          {"pair", {s, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                    {{"SpecialToken", {{"id", bos}, {"type_id", 1}}}},
                    {{"Sequence", {{"id", "B"}, {"type_id", 1}}}}}},
          {"special_tokens", {{bos, {{"id", bos}, {"ids", {sp.bos_id()}}, {"tokens", {bos}}}}}}};
}

}  // namespace

json sentencepiece_bpe_to_tokenizer_json(const std::string& model_path) {
  sentencepiece::SentencePieceProcessor sp;
  const auto status = sp.Load(model_path);
  if (!status.ok()) throw std::runtime_error(model_path + ": cannot load SentencePiece model: " + status.ToString());
  json vocab = json::object();
  std::unordered_map<std::string, int> ids;
  json added = json::array();
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    const std::string piece = sp.IdToPiece(id);
    vocab[piece] = id;
    ids[piece] = id;
    if (piece_special(sp, id))
      added.push_back({{"id", id}, {"content", piece}, {"single_word", false}, {"lstrip", false},
                       {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  const std::string space = "\xe2\x96\x81";  // U+2581, SentencePiece's whitespace mark
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer", {{"type", "Sequence"},
                      {"normalizers", {{{"type", "Prepend"}, {"prepend", space}},
                                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}}}}}},
      {"pre_tokenizer", nullptr},
      {"post_processor", post_processor_of(sp)},
      {"decoder", {{"type", "Sequence"},
                   {"decoders", {{{"type", "Replace"}, {"pattern", {{"String", space}}}, {"content", " "}},
                                 {{"type", "ByteFallback"}},
                                 {{"type", "Fuse"}},
                                 {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
      {"model", {{"type", "BPE"},
                 {"dropout", nullptr},
                 {"unk_token", sp.unk_id() >= 0 ? json(sp.IdToPiece(sp.unk_id())) : json(nullptr)},
                 {"continuing_subword_prefix", nullptr},
                 {"end_of_word_suffix", nullptr},
                 {"fuse_unk", true},
                 {"byte_fallback", true},
                 {"ignore_merges", false},
                 {"vocab", vocab},
                 {"merges", merges_of(sp, ids)}}}};
}

}  // namespace linear_ard::io
