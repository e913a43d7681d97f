// tokenizer_tool: the command-line bridge the Python tokenizer tests (tests/python/tokenizer_tool.py)
// use to compare our tokenizers and their pipeline stages with HF's, and the encode-speed
// measurement of docs/tokenizers.md.
//   tokenizer_tool FOLDER info                  -> {"vocab_size", "bos_id", "eos_id"}
//   tokenizer_tool FOLDER batch IN.jsonl OUT.jsonl  one reply line per request line:
//       {"text", "add_special_tokens"} -> {"ids"}     {"ids", "skip_special_tokens"} -> {"text"}
//   tokenizer_tool FOLDER time TEXT_FILE [REPEATS]    -> {"bytes", "ids", "seconds"} (best run)
//   tokenizer_tool components IN.jsonl OUT.jsonl   one pipeline stage, built from its tokenizer.json
//       spec, per request line: {"normalizer", "text"} -> {"text"}
//       {"pre_tokenizer", "text"} -> {"pieces"}      {"decoder", "tokens"} -> {"text"}
// A line that fails gets {"error": message}. Exit status 1 when the folder cannot be loaded.
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "decoder.h"
#include "linear_ard/io/tokenizer.h"
#include "normalizer.h"
#include "pre_tokenizer.h"

namespace {

using linear_ard::io::Tokenizer;
using nlohmann::json;

// Answers each request line of IN with one reply line of OUT: answer(request), or {"error": ...}.
template <typename Answer>
int run_lines(const std::string& in_path, const std::string& out_path, Answer answer) {
  std::ifstream in(in_path);
  std::ofstream out(out_path);
  if (!in || !out) {
    std::cerr << "tokenizer_tool: cannot open " << (in ? out_path : in_path) << "\n";
    return 1;
  }
  std::string line;
  while (std::getline(in, line)) {
    const json request = json::parse(line);
    json reply;
    try {
      reply = answer(request);
    } catch (const std::exception& e) {
      reply = {{"error", e.what()}};
    }
    out << reply.dump() << "\n";
  }
  return 0;
}

json run_request(const Tokenizer& tokenizer, const json& request) {
  if (request.contains("text")) {
    const auto text = request.at("text").get<std::string>();
    return {{"ids", tokenizer.encode(text, request.value("add_special_tokens", true))}};
  }
  const auto ids = request.at("ids").get<std::vector<int32_t>>();
  return {{"text", tokenizer.decode(ids, request.value("skip_special_tokens", false))}};
}

int run_time(const Tokenizer& tokenizer, const std::string& path, int repeats) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  double best = 1e30;
  size_t n_ids = 0;
  for (int r = 0; r < repeats; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    n_ids = tokenizer.encode(text).size();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::cout << json{{"bytes", text.size()}, {"ids", n_ids}, {"seconds", best}}.dump() << "\n";
  return 0;
}

// Runs one pipeline stage on one request (see the file comment).
json run_component(const json& request) {
  if (request.contains("normalizer")) {
    std::string text = request.at("text").get<std::string>();
    const auto normalizer = linear_ard::io::normalizer_from_json(request["normalizer"]);
    if (normalizer) normalizer->normalize(text);
    return {{"text", text}};
  }
  if (request.contains("pre_tokenizer")) {
    std::vector<linear_ard::io::PreToken> pieces{{request.at("text").get<std::string>(), true}};
    if (const auto pre_tokenizer = linear_ard::io::pre_tokenizer_from_json(request["pre_tokenizer"])) {
      pre_tokenizer->pre_tokenize(pieces);
    }
    json texts = json::array();
    for (const auto& piece : pieces) texts.push_back(piece.text);
    return {{"pieces", texts}};
  }
  const auto decoder = linear_ard::io::decoder_from_json(request.at("decoder"));
  if (!decoder) throw std::invalid_argument("components: the decoder spec is null");
  auto tokens = request.at("tokens").get<std::vector<std::string>>();
  decoder->decode_chain(tokens);
  std::string text;
  for (const auto& token : tokens) text += token;
  return {{"text", text}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tokenizer_tool FOLDER info|batch|time ... | tokenizer_tool components IN OUT\n";
    return 2;
  }
  if (std::string(argv[1]) == "components" && argc == 4) return run_lines(argv[2], argv[3], run_component);
  std::unique_ptr<Tokenizer> tokenizer;
  try {
    tokenizer = linear_ard::io::tokenizer_load(argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "tokenizer_tool: " << e.what() << "\n";
    return 1;
  }
  const std::string mode = argv[2];
  if (mode == "info") {
    std::cout << json{{"vocab_size", tokenizer->vocab_size()}, {"bos_id", tokenizer->bos_id()},
                      {"eos_id", tokenizer->eos_id()}}.dump() << "\n";
    return 0;
  }
  if (mode == "batch" && argc == 5) {
    return run_lines(argv[3], argv[4], [&](const json& request) { return run_request(*tokenizer, request); });
  }
  if (mode == "time" && argc >= 4) return run_time(*tokenizer, argv[3], argc >= 5 ? std::stoi(argv[4]) : 3);
  std::cerr << "tokenizer_tool: bad arguments for mode " << mode << "\n";
  return 2;
}
