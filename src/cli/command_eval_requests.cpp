// `linear-ard eval requests MODEL --in REQUESTS.jsonl --out ANSWERS.jsonl`: lm-eval's requests
// (loglikelihood, loglikelihood_rolling, generate_until) answered by the model engine, one JSON line
// per request in order: the engine side of the `linear-ard` lm-eval model (docs/eval.md).
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "command_eval_args.h"            // defines: EvalDeviceArgs, eval_device_args_add, eval_writes
#include "linear_ard/eval/eval_model.h"   // defines: eval_model_load
#include "linear_ard/eval/lm_requests.h"  // defines: lm_requests_answer
#include "linear_ard/io/file_atomic.h"    // defines: file_write_atomic
#include "model_arg.h"                    // defines: model_arg_add

namespace linear_ard::cli {

namespace {

struct RequestsArgs : EvalDeviceArgs {
  std::string model, in, out;
  eval::LmRequestOptions options;
  bool no_bos = false;
};

nlohmann::json requests_read(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read requests file " + path);
  nlohmann::json requests = nlohmann::json::array();
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      requests.push_back(nlohmann::json::parse(line));
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(path + " line " + std::to_string(number) + ": not valid JSON (" + e.what() + ")");
    }
  }
  return requests;
}

}  // namespace

void eval_requests_register(CLI::App& eval) {
  auto a = std::make_shared<RequestsArgs>();
  CLI::App* sub = eval.add_subcommand(
      "requests", "Answer lm-evaluation-harness requests (JSON lines: loglikelihood, loglikelihood_rolling, "
                  "generate_until) with the model engine, as lm-eval's HF backend does; used by the `linear-ard` "
                  "lm-eval model (python -m linear_ard.lm_eval_cli)");
  model_arg_add(sub, a->model);
  eval_device_args_add(sub, *a);
  sub->add_option("--in", a->in, "requests, one JSON object a line (docs/eval.md)")->required()->check(CLI::ExistingFile);
  sub->add_option("--out", a->out, "answers, one JSON object a line in the requests' order")->required();
  sub->add_option("--batch_size,--batch-size", a->options.batch_size, "sequences per forward")->capture_default_str();
  sub->add_option("--max_length,--max-length", a->options.max_length,
                  "longest sequence (lm-eval's max_length); 0: the model's max positions")->capture_default_str();
  sub->add_option("--max_gen_toks,--max-gen-toks", a->options.max_gen_toks,
                  "tokens generated when a request does not say")->capture_default_str();
  sub->add_flag("--no-bos", a->no_bos, "encode without the tokenizer's special tokens (lm-eval's add_bos_token=False)");
  sub->callback([a] {
    const nlohmann::json requests = requests_read(a->in);
    a->options.add_special_tokens = !a->no_bos;
    a->options.progress = !a->quiet;
    const auto model = eval::eval_model_load(a->model, a->device, a->dtype);
    const nlohmann::json answers = eval::lm_requests_answer(model, requests, a->options);
    if (!eval_writes()) return;
    std::string lines;
    for (const auto& answer : answers)
      lines += answer.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    io::file_write_atomic(a->out, lines);
  });
}

}  // namespace linear_ard::cli
