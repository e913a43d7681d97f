// tokenizer_tool: the command-line bridge tests/python/test_tokenizer_parity.py uses to compare
// our tokenizers with HF's, and the encode-speed measurement of docs/tokenizers.md.
//   tokenizer_tool FOLDER info                  -> {"vocab_size", "bos_id", "eos_id"}
//   tokenizer_tool FOLDER batch IN.jsonl OUT.jsonl  one reply line per request line:
//       {"text", "add_special_tokens"} -> {"ids"}     {"ids", "skip_special_tokens"} -> {"text"}
//   tokenizer_tool FOLDER time TEXT_FILE [REPEATS]    -> {"bytes", "ids", "seconds"} (best run)
// A line that fails gets {"error": message}. Exit status 1 when the folder cannot be loaded.
#include <chrono>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "linear_ard/io/tokenizer.h"

namespace {

using linear_ard::io::Tokenizer;
using nlohmann::json;

int run_batch(const Tokenizer& tokenizer, const std::string& in_path, const std::string& out_path) {
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
      if (request.contains("text")) {
        reply["ids"] = tokenizer.encode(request.at("text").get<std::string>(), request.value("add_special_tokens", true));
      } else {
        reply["text"] = tokenizer.decode(request.at("ids").get<std::vector<int32_t>>(),
                                         request.value("skip_special_tokens", false));
      }
    } catch (const std::exception& e) {
      reply = {{"error", e.what()}};
    }
    out << reply.dump() << "\n";
  }
  return 0;
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

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: tokenizer_tool FOLDER info|batch|time ...\n";
    return 2;
  }
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
  if (mode == "batch" && argc == 5) return run_batch(*tokenizer, argv[3], argv[4]);
  if (mode == "time" && argc >= 4) return run_time(*tokenizer, argv[3], argc >= 5 ? std::stoi(argv[4]) : 3);
  std::cerr << "tokenizer_tool: bad arguments for mode " << mode << "\n";
  return 2;
}
