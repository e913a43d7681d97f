// `linear-ard eval ppl|tasks|passkey`: perplexity, harness-style tasks and passkey retrieval of a
// model folder, written as markdown + JSON reports (docs/eval.md); registers `eval ruler` and
// `eval compare` from their own files.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "command_eval_args.h"  // defines: EvalDeviceArgs, eval_report_emit, eval_*_register
#include "commands.h"
#include "eval_memory_use.h"  // defines: ppl_memory_use, tasks_memory_use, passkey_memory_use
#include "model_arg.h"  // defines: model_arg_add
#include "linear_ard/eval/eval_model.h"   // defines: eval_model_load
#include "linear_ard/eval/passkey.h"      // defines: passkey_evaluate
#include "linear_ard/eval/perplexity.h"   // defines: perplexity_compute, perplexity_text_*
#include "linear_ard/eval/report.h"       // defines: markdown_table, tasks_report_*, task_sample_json, lm_eval_paths
#include "linear_ard/eval/task_eval.h"    // defines: task_evaluate
#include "linear_ard/io/file_atomic.h"    // defines: file_write_atomic
#include "linear_ard/io/json_file.h"      // defines: json_file_read, json_file_write
#include "linear_ard/io/text_dataset.h"   // defines: text_documents_read, TextSource
#include "python_run.h"                   // defines: python_run, python_executable

namespace linear_ard::cli {

namespace {

struct ModelArgs : EvalDeviceArgs {
  std::string model;
};

void model_args_add(CLI::App* sub, ModelArgs& a) {
  model_arg_add(sub, a.model);
  eval_device_args_add(sub, a);
}

void report_emit(const ModelArgs& a, const std::string& markdown, const nlohmann::json& json) {
  eval_report_emit(a.output, markdown, json);
}

void ppl_register(CLI::App& eval) {
  auto a = std::make_shared<ModelArgs>();
  auto text = std::make_shared<io::TextSource>();
  auto lengths = std::make_shared<std::vector<int64_t>>();
  auto o = std::make_shared<eval::PerplexityOptions>();
  auto no_bos = std::make_shared<bool>(false);
  CLI::App* sub = eval.add_subcommand("ppl", "Perplexity on text at given context lengths");
  model_args_add(sub, *a);
  sub->add_option("--text", text->path, "text: plain text (one document), .jsonl or .json records (docs/eval.md)")
      ->required()->check(CLI::ExistingFile);
  sub->add_option("--text-field", text->field, "key of the text in JSON records (dotted for nested objects)")
      ->capture_default_str();
  sub->add_option("--ctx", *lengths, "context lengths (windows), e.g. --ctx 256 512")->required()->check(int_at_least(2));
  sub->add_option("--stride", o->stride, "window stride; 0: disjoint windows")
      ->check(int_at_least(0))->capture_default_str();
  sub->add_option("--batch_size,--batch-size", o->batch_size, "windows per forward")
      ->check(int_at_least(1))->capture_default_str();
  sub->add_flag("--no-bos", *no_bos, "encode documents without the tokenizer's special tokens (BOS)");
  sub->callback([a, text, lengths, o, no_bos] {
    eval_output_check(a->output, {a->model}, {text->path});
    ppl_stride_check(o->stride, *lengths);
    const auto docs = io::text_documents_read(*text);
    eval::EvalMemoryUse use = ppl_memory_use(docs, *lengths, o->stride, o->batch_size, false);
    use.log = !a->quiet;
    const auto model = eval::eval_model_load(a->model, a->device, a->dtype, use);
    const auto encoded = eval::perplexity_text_encode(*model.tokenizer, docs, !*no_bos, text->path);
    eval::perplexity_text_check(model, encoded, *lengths);
    o->progress = !a->quiet;
    nlohmann::json rows = nlohmann::json::array();
    std::vector<std::vector<std::string>> table;
    for (int64_t ctx : *lengths) {
      eval::PerplexityOptions opt = *o;
      opt.ctx_len = ctx;
      const auto r = eval::perplexity_compute(model, encoded, opt);
      rows.push_back(eval::ppl_result_json(r));
      table.push_back({std::to_string(ctx), std::to_string(r.stride), std::to_string(r.tokens),
                       eval::number_text(r.nll, 3), eval::number_text(r.ppl, 4),
                       eval::number_text(r.bits_per_byte, 4), eval::number_text(r.tokens_per_s, 0)});
    }
    const nlohmann::json json = {{"model", a->model}, {"text", text->path}, {"device", model.device_name},
                                 {"dtype", model.dtype_name}, {"results", rows}};
    report_emit(*a, eval::markdown_table({"ctx", "stride", "tokens", "NLL", "PPL", "bits/byte", "tok/s"}, table),
                json);
  });
}

// transformers' name of an EvalModel dtype.
std::string dtype_hf_name(const eval::EvalModel& model) { return model.dtype_name == "bf16" ? "bfloat16" : "float32"; }

// lm-eval's [token text, id as a string] of a special token, or null when the tokenizer has none.
nlohmann::json special_token_json(const io::Tokenizer& tokenizer, int32_t id) {
  if (id < 0) return nullptr;
  return {tokenizer.decode({id}), std::to_string(id)};
}

struct TasksArgs : ModelArgs {
  std::vector<std::string> files;  // task files, or lm-eval task names
  eval::TaskOptions options;
  std::string fewshot_file, reference, avg_metric = "acc", output_path, include_path;
  bool log_samples = false, no_bos = false, num_fewshot_given = false;
};

void tasks_options_add(CLI::App* sub, TasksArgs& a) {
  eval::TaskOptions& o = a.options;
  sub->add_option("--tasks", a.files,
                  "task files (schema: docs/eval.md), or lm-eval task names (its registry, or YAMLs under "
                  "--include_path), comma- or space-separated")
      ->required()->delimiter(',');
  sub->add_option("--include_path,--include-path", a.include_path,
                  "with task names: a folder of lm-eval task YAMLs, as lm-eval's --include_path")
      ->check(CLI::ExistingDirectory);
  sub->add_option("--num_fewshot,--num-fewshot", o.num_fewshot, "few-shot examples per prompt")
      ->check(int_at_least(0))->capture_default_str();
  sub->add_option("--fewshot-file", a.fewshot_file,
                  "take the few-shot examples in order from this task file (default: random docs of "
                  "the task itself)")->check(CLI::ExistingFile);
  sub->add_option("--seed", o.seed, "few-shot sampling seed")->capture_default_str();
  sub->add_option("--target-delimiter", o.target_delimiter,
                  "text between a context and each answer (lm-eval's target_delimiter)")->default_str("\" \"");
  sub->add_option("--fewshot-delimiter", o.fewshot_delimiter,
                  "text after each few-shot example (lm-eval's fewshot_delimiter)")->default_str("\"\\n\\n\"");
  sub->add_option("--batch_size,--batch-size", o.batch_size, "requests per forward")
      ->check(int_at_least(1))->capture_default_str();
  sub->add_option("--max_length,--max-length", o.max_length,
                  "left-truncate requests to this; 0: the model's max positions")
      ->check(int_zero_or_at_least(2))->capture_default_str();
  sub->add_option("--limit", o.limit, "evaluate only the first N docs of each task; 0: all")
      ->check(int_at_least(0))->capture_default_str();
  sub->add_option("--avg-metric", a.avg_metric, "acc or acc_norm: the per-task number in the table")
      ->check(CLI::IsMember({"acc", "acc_norm"}))->capture_default_str();
  sub->add_option("--reference", a.reference, "results JSON of the reference (native) model: adds Rec.")
      ->check(CLI::ExistingFile);
  sub->add_option("--output_path", a.output_path,
                  "write lm-eval's results_<date>.json (and samples) here: a folder (results under "
                  "<folder>/<model>/) or a .json path, as lm-eval does");
  sub->add_flag("--log_samples", a.log_samples,
                "also write lm-eval's samples_<task>_<date>.jsonl (every request with its loglikelihood)");
  sub->add_flag("--no-bos", a.no_bos, "encode contexts without the tokenizer's special tokens (BOS); "
                                      "lm-eval's add_bos_token=False");
}

// lm-eval's results JSON of `results`: the report plus its config, tokenizer and timing fields.
nlohmann::json tasks_results_json(const TasksArgs& a, const eval::EvalModel& model,
                                  const std::vector<eval::TaskResult>& results,
                                  std::chrono::steady_clock::time_point start) {
  const eval::TaskOptions& o = a.options;
  nlohmann::json json = eval::tasks_report_json(results, o, a.avg_metric);
  const int64_t max_length = o.max_length > 0 ? o.max_length : model.weights.config.max_position_embeddings;
  json["config"] = {{"model", "linear-ard"},
                    {"model_args", {{"pretrained", a.model}, {"dtype", dtype_hf_name(model)}}},
                    {"model_dtype", "torch." + dtype_hf_name(model)},
                    {"batch_size", o.batch_size},
                    {"device", model.device_name},
                    {"limit", o.limit > 0 ? nlohmann::json(o.limit) : nlohmann::json(nullptr)},
                    {"fewshot_seed", o.seed},
                    {"add_special_tokens", o.add_special_tokens}};
  json["model_name"] = a.model;
  json["max_length"] = max_length;
  json["tokenizer_bos_token"] = special_token_json(*model.tokenizer, model.tokenizer->bos_id());
  json["tokenizer_eos_token"] = special_token_json(*model.tokenizer, model.tokenizer->eos_id());
  json["date"] = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  json["total_evaluation_time_seconds"] =
      std::to_string(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return json;
}

// lm-eval's results_<date>.json under --output_path, and with --log_samples its samples files.
void tasks_lm_eval_write(const TasksArgs& a, const std::vector<eval::TaskResult>& results, const nlohmann::json& json) {
  const eval::LmEvalPaths paths = eval::lm_eval_paths(a.output_path, a.model);
  std::filesystem::create_directories(paths.samples_dir);
  io::json_file_write(paths.results, json);
  if (a.log_samples)
    for (const auto& r : results) {
      std::string lines;
      for (const auto& sample : r.samples)
        lines += eval::task_sample_json(sample, r.type).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
                 "\n";
      io::file_write_atomic(paths.samples_dir + "/samples_" + r.name + "_" + paths.date + ".jsonl", lines);
    }
  if (!a.quiet) std::cerr << "[tasks] results written to " << paths.results << std::endl;
}

// A --tasks entry that names a file (it exists, has a folder or a .json/.jsonl suffix) rather than an
// lm-eval task.
bool task_is_file(const std::string& task) {
  const std::filesystem::path p(task);
  return std::filesystem::exists(p) || task.find('/') != std::string::npos || p.extension() == ".jsonl" ||
         p.extension() == ".json";
}

// Task names: lm-eval's command line with the `linear-ard` model (python/linear_ard/lm_eval_cli.py),
// which builds the requests and metrics and has `eval requests` answer them; lm-eval writes the
// results/samples files and prints its table.
void tasks_lm_eval_run(const TasksArgs& a) {
  for (const auto& [given, option] : {std::pair{!a.fewshot_file.empty(), "--fewshot-file"},
                                      {!a.reference.empty(), "--reference"}, {!a.output.empty(), "--output"}})
    if (given) usage_error(std::string(option) + " applies to task files; lm-eval task names write lm-eval's results (--output_path)");
  const eval::TaskOptions& o = a.options;
  std::string tasks, model_args = "pretrained=" + a.model + ",dtype=" + a.dtype;
  for (const auto& t : a.files) tasks += (tasks.empty() ? "" : ",") + t;
  if (o.max_length > 0) model_args += ",max_length=" + std::to_string(o.max_length);
  if (a.no_bos) model_args += ",add_bos_token=False";
  std::vector<std::string> args{"-m", "linear_ard.lm_eval_cli", "--model", "linear-ard", "--model_args", model_args,
                                "--tasks", tasks, "--batch_size", std::to_string(o.batch_size), "--device", a.device};
  if (!a.include_path.empty()) args.insert(args.end(), {"--include_path", a.include_path});
  if (a.num_fewshot_given) args.insert(args.end(), {"--num_fewshot", std::to_string(o.num_fewshot)});
  if (o.limit > 0) args.insert(args.end(), {"--limit", std::to_string(o.limit)});
  if (!a.output_path.empty()) args.insert(args.end(), {"--output_path", a.output_path});
  if (a.log_samples) args.push_back("--log_samples");
  const int status = python_run(args, /*report=*/true);
  if (status < 0) throw std::runtime_error("could not run " + python_executable() + " -m linear_ard.lm_eval_cli");
  if (status != 0) throw CLI::RuntimeError(status);  // lm_eval_cli has printed its one-line error
}

void tasks_run(TasksArgs& a) {
  eval::TaskOptions& o = a.options;
  size_t files = 0;
  for (const auto& t : a.files) files += task_is_file(t);
  if (files > 0 && files < a.files.size())
    usage_error("--tasks mixes task files and lm-eval task names: run them separately");
  if (files == 0) return tasks_lm_eval_run(a);
  for (const auto& t : a.files)
    if (!std::filesystem::is_regular_file(t)) throw std::invalid_argument("task file " + t + " does not exist");
  if (!a.include_path.empty()) usage_error("--include_path applies to lm-eval task names, not task files");
  if (a.log_samples && a.output_path.empty()) usage_error("--log_samples needs --output_path (as in lm-eval)");
  std::vector<std::string> inputs = a.files;
  for (const std::string* f : {&a.fewshot_file, &a.reference})
    if (!f->empty()) inputs.push_back(*f);
  eval_output_check(a.output, {a.model}, inputs);
  if (!a.output_path.empty()) output_paths_check("--output_path " + a.output_path, {a.output_path}, {a.model}, inputs);
  o.add_special_tokens = !a.no_bos;
  o.progress = !a.quiet;
  const auto start = std::chrono::steady_clock::now();
  // Task files are read and checked before the model is loaded: a bad line fails fast.
  std::vector<eval::TaskFile> tasks;
  for (const auto& f : a.files) tasks.push_back(eval::task_file_read(f, o.target_delimiter));
  std::optional<eval::TaskFile> fewshot;
  if (!a.fewshot_file.empty()) fewshot = eval::task_file_read(a.fewshot_file, o.target_delimiter);
  o.fewshot_source = fewshot ? &*fewshot : nullptr;
  for (const auto& t : tasks) eval::task_prompts(t, o);  // few-shot problems fail before loading too
  std::optional<nlohmann::json> ref;
  if (!a.reference.empty()) ref = io::json_file_read(a.reference);
  eval::EvalMemoryUse use = tasks_memory_use(tasks, o);
  use.log = !a.quiet;
  const auto model = eval::eval_model_load(a.model, a.device, a.dtype, use);
  std::vector<eval::TaskResult> results;
  for (const auto& t : tasks) results.push_back(eval::task_evaluate(model, t, o));

  nlohmann::json json = tasks_results_json(a, model, results, start);
  if (ref) json["linear_ard"]["recovery"] = 100 * json["linear_ard"]["avg"].get<double>() /
                                             ref->at("linear_ard").at("avg").get<double>();
  if (!a.output_path.empty() && eval_writes()) tasks_lm_eval_write(a, results, json);
  report_emit(a, eval::tasks_report_markdown({a.model}, {json}, ref), json);
}

void tasks_register(CLI::App& eval) {
  auto a = std::make_shared<TasksArgs>();
  CLI::App* sub = eval.add_subcommand(
      "tasks", "lm-evaluation-harness tasks: lm-eval task names (its registry or --include_path YAMLs, run by "
               "lm-eval with this engine answering its requests), or JSONL task files (loglikelihood multiple "
               "choice and last word: this project's schema or lm-eval's --log_samples output); lm-eval's "
               "results JSON and flags");
  model_args_add(sub, *a);
  tasks_options_add(sub, *a);
  sub->callback([a, sub] {
    a->num_fewshot_given = sub->count("--num_fewshot") > 0;
    tasks_run(*a);
  });
}

void passkey_register(CLI::App& eval) {
  auto a = std::make_shared<ModelArgs>();
  auto o = std::make_shared<eval::PasskeyOptions>();
  CLI::App* sub = eval.add_subcommand("passkey", "Passkey retrieval at chosen lengths, greedy decoding");
  model_args_add(sub, *a);
  sub->add_option("--lengths", o->lengths, "prompt lengths in tokens")->required()->check(int_at_least(1));
  sub->add_option("--depths", o->depths, "passkey depths in [0, 1]")->check(number_in(0, 1))->capture_default_str();
  sub->add_option("--samples", o->samples, "prompts per length and depth")->check(int_at_least(1))->capture_default_str();
  sub->add_option("--seed", o->seed, "seed of the first prompt's passkey (consecutive after it)")->capture_default_str();
  sub->add_option("--max-new-tokens", o->max_new_tokens, "tokens generated per prompt")
      ->check(int_at_least(1))->capture_default_str();
  auto no_lead = std::make_shared<bool>(false);
  sub->add_flag("--no-answer-lead", *no_lead, "end prompts at 'The pass key is' as the reference prompt does, "
                                               "without the bare space that starts the answer (docs/eval.md)");
  sub->callback([a, o, no_lead] {
    eval_output_check(a->output, {a->model}, {});
    o->progress = !a->quiet;
    o->answer_lead = !*no_lead;
    eval::EvalMemoryUse use = passkey_memory_use(*o);
    use.log = !a->quiet;
    const auto model = eval::eval_model_load(a->model, a->device, a->dtype, use);
    const auto r = eval::passkey_evaluate(model, *o);
    std::vector<std::vector<std::string>> table;
    for (const auto& row : r.rows) {
      table.push_back({std::to_string(row.length), eval::number_text(row.depth, 2),
                       std::to_string(row.samples), eval::number_text(100 * row.accuracy, 1)});
    }
    nlohmann::json json = eval::passkey_report_json(r);
    json["model"] = a->model;
    json["device"] = model.device_name;
    json["dtype"] = model.dtype_name;
    report_emit(*a, eval::markdown_table({"length", "depth", "samples", "accuracy %"}, table), json);
  });
}

}  // namespace

void command_eval_register(CLI::App& app) {
  CLI::App* eval = app.add_subcommand("eval", "Evaluate models: perplexity, tasks, passkey, RULER, comparisons");
  eval->require_subcommand(1);
  ppl_register(*eval);
  tasks_register(*eval);
  passkey_register(*eval);
  eval_ruler_register(*eval);
  eval_compare_register(*eval);
  eval_requests_register(*eval);
}

}  // namespace linear_ard::cli
