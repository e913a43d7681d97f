// `linear-ard eval compare MODEL... --names ...`: the same evaluations on several models (native,
// scaled, restored) in one report — markdown, JSON and scripts/plot.py's figures — with Rec. against
// a reference model (docs/eval.md).
#include <algorithm>
#include <iostream>
#include <memory>
#include <optional>

#include "command_eval_args.h"           // defines: EvalDeviceArgs, RulerArgs, eval_report_emit
#include "eval_memory_use.h"              // defines: *_memory_use
#include "linear_ard/eval/compare.h"      // defines: compare_*
#include "linear_ard/eval/eval_model.h"   // defines: eval_model_load
#include "linear_ard/eval/passkey.h"      // defines: passkey_evaluate
#include "linear_ard/eval/perplexity.h"   // defines: perplexity_compute, perplexity_text_*
#include "linear_ard/eval/ruler.h"        // defines: ruler_evaluate, ruler_report_json
#include "linear_ard/eval/task_eval.h"    // defines: task_evaluate
#include "linear_ard/io/text_dataset.h"   // defines: text_documents_read, TextSource
#include "model_arg.h"                    // defines: model_arg_check
#include "plot_run.h"                     // defines: plot_run

namespace linear_ard::cli {

namespace {

struct CompareArgs {
  std::vector<std::string> models, names;
  std::string reference;
  std::string kl_to;  // --kl-to: the model (a name) whose next-token distributions the others' are compared with
  // ppl
  io::TextSource text;
  std::vector<int64_t> ctx;
  eval::PerplexityOptions ppl;
  // tasks
  std::vector<std::string> task_files;
  eval::TaskOptions tasks;
  std::string avg_metric = "acc";
  // passkey
  eval::PasskeyOptions passkey;
  bool no_answer_lead = false;
  bool no_bos = false;
};

void compare_options_add(CLI::App* sub, EvalDeviceArgs& a, CompareArgs& c, RulerArgs& r) {
  sub->add_option("MODELS", c.models, "HF model folders or hub names org/name[@revision] in the local HF cache")
      ->required()
      ->check(model_arg_check());
  sub->add_option("--names", c.names, "a short name per model (default: the folders)");
  sub->add_option("--reference", c.reference, "name of the reference model for Rec. (default: the first)");
  eval_device_args_add(sub, a);
  sub->add_option("--text", c.text.path, "perplexity text: plain text, .jsonl or .json records (docs/eval.md)")
      ->check(CLI::ExistingFile);
  sub->add_option("--text-field", c.text.field, "key of the text in JSON records (dotted for nested objects)")
      ->capture_default_str();
  sub->add_option("--ctx", c.ctx, "perplexity context lengths")->check(int_at_least(2));
  sub->add_option("--kl-to", c.kl_to, "name of a model (e.g. the native one): with the perplexity, each model's mean "
                                      "KL from its next-token distributions on the same windows");
  sub->add_option("--stride", c.ppl.stride, "perplexity window stride; 0: disjoint")
      ->check(int_at_least(0))->capture_default_str();
  sub->add_option("--batch_size,--batch-size", c.ppl.batch_size, "perplexity windows / task requests per forward")
      ->check(int_at_least(1))->capture_default_str();
  sub->add_option("--tasks", c.task_files, "task files, comma- or space-separated (docs/eval.md schema)")
      ->delimiter(',')->check(CLI::ExistingFile);
  sub->add_option("--num_fewshot,--num-fewshot", c.tasks.num_fewshot, "few-shot examples per task prompt")
      ->check(int_at_least(0))->capture_default_str();
  sub->add_option("--limit", c.tasks.limit, "only the first N docs of each task; 0: all")
      ->check(int_at_least(0))->capture_default_str();
  sub->add_option("--avg-metric", c.avg_metric, "acc or acc_norm")
      ->check(CLI::IsMember({"acc", "acc_norm"}))->capture_default_str();
  sub->add_flag("--no-bos", c.no_bos, "encode perplexity documents and task contexts without the tokenizer's "
                                      "special tokens (BOS)");
  sub->add_option("--passkey-lengths", c.passkey.lengths, "passkey prompt lengths")->check(int_at_least(1));
  sub->add_option("--passkey-depths", c.passkey.depths, "passkey depths in [0, 1]")
      ->check(number_in(0, 1))->capture_default_str();
  sub->add_option("--passkey-samples", c.passkey.samples, "passkey prompts per length and depth")
      ->check(int_at_least(1))->capture_default_str();
  sub->add_flag("--passkey-no-answer-lead", c.no_answer_lead,
                "end passkey prompts at 'The pass key is', as the reference prompt does (docs/eval.md)");
  ruler_args_add(sub, r, "ruler-");
}

// What to evaluate and its inputs, read and checked before the first model is loaded.
struct CompareInputs {
  std::string reference;
  eval::EvalMemoryUse memory;  // the largest of the evaluations asked for
  bool ppl = false, tasks = false, passkey = false, ruler = false;
  std::vector<std::string> docs;
  std::vector<eval::TaskFile> task_files;
  eval::RulerData ruler_data;
};

CompareInputs compare_inputs_read(const EvalDeviceArgs& a, CompareArgs& c, RulerArgs& r) {
  CompareInputs in;
  if (c.names.empty()) c.names = c.models;
  if (c.names.size() != c.models.size())
    usage_error("--names has " + std::to_string(c.names.size()) + " names for " + std::to_string(c.models.size()) +
                " models");
  in.reference = c.reference.empty() ? c.names[0] : c.reference;
  if (std::find(c.names.begin(), c.names.end(), in.reference) == c.names.end())
    usage_error("--reference '" + in.reference + "' is not one of --names");
  in.ppl = !c.text.path.empty();
  in.tasks = !c.task_files.empty();
  in.passkey = !c.passkey.lengths.empty();
  in.ruler = ruler_args_given(r);
  if (in.ppl != !c.ctx.empty()) usage_error("perplexity needs both --text and --ctx");
  if (!c.kl_to.empty() && !in.ppl) usage_error("--kl-to needs the perplexity's --text and --ctx");
  if (!c.kl_to.empty() && std::find(c.names.begin(), c.names.end(), c.kl_to) == c.names.end())
    usage_error("--kl-to '" + c.kl_to + "' is not one of --names");
  if (!in.ppl && !in.tasks && !in.passkey && !in.ruler)
    usage_error("nothing to compare: give --text/--ctx, --tasks, --passkey-lengths, --ruler-lengths or --ruler-prepared");
  if (in.ppl) ppl_stride_check(c.ppl.stride, c.ctx);
  std::vector<std::string> inputs = ruler_args_inputs(r);
  inputs.insert(inputs.end(), c.task_files.begin(), c.task_files.end());
  if (in.ppl) inputs.push_back(c.text.path);
  eval_output_check(a.output, c.models, inputs);
  c.tasks.add_special_tokens = !c.no_bos;
  c.ppl.progress = c.tasks.progress = c.passkey.progress = !a.quiet;
  c.passkey.answer_lead = !c.no_answer_lead;
  c.tasks.batch_size = c.ppl.batch_size;
  if (in.ppl) in.docs = io::text_documents_read(c.text);
  for (const auto& f : c.task_files) in.task_files.push_back(eval::task_file_read(f, c.tasks.target_delimiter));
  for (const auto& t : in.task_files) eval::task_prompts(t, c.tasks);
  if (in.ruler) in.ruler_data = ruler_args_resolve(r, a.quiet);
  std::vector<eval::EvalMemoryUse> uses;
  if (in.ppl) uses.push_back(ppl_memory_use(in.docs, c.ctx, c.ppl.stride, c.ppl.batch_size, !c.kl_to.empty()));
  if (in.tasks) uses.push_back(tasks_memory_use(in.task_files, c.tasks));
  if (in.passkey) uses.push_back(passkey_memory_use(c.passkey));
  if (in.ruler) uses.push_back(ruler_memory_use(r.options));
  in.memory = memory_use_largest(uses);
  in.memory.log = !a.quiet;
  return in;
}

// The perplexity text as `model` encodes it; with a KL reference, the same ids as the reference's
// tokenizer gives (the KL compares distributions over one vocabulary).
eval::PerplexityText compare_text_encode(const eval::EvalModel& model, const CompareArgs& c, const CompareInputs& in,
                                         const eval::EvalModel* kl_reference) {
  auto text = eval::perplexity_text_encode(*model.tokenizer, in.docs, !c.no_bos, c.text.path);
  if (kl_reference &&
      eval::perplexity_text_encode(*kl_reference->tokenizer, in.docs, !c.no_bos, c.text.path).ids != text.ids)
    throw std::invalid_argument("--kl-to " + c.kl_to + ": " + model.path + "'s tokenizer encodes " + c.text.path +
                                " differently from " + kl_reference->path + "'s; the KL needs one vocabulary");
  return text;
}

// One model's entry of the report: every evaluation asked for.
nlohmann::json compare_model_evaluate(const eval::EvalModel& model, const CompareArgs& c, const RulerArgs& r,
                                      const CompareInputs& in, const eval::EvalModel* kl_reference) {
  nlohmann::json entry = nlohmann::json::object();
  if (in.ppl) {
    const auto text = compare_text_encode(model, c, in, kl_reference);
    eval::perplexity_text_check(model, text, c.ctx);
    nlohmann::json rows = nlohmann::json::array();
    for (int64_t ctx : c.ctx) {
      eval::PerplexityOptions o = c.ppl;
      o.ctx_len = ctx;
      o.kl_reference = kl_reference;
      rows.push_back(eval::ppl_result_json(eval::perplexity_compute(model, text, o)));
    }
    entry["ppl"] = rows;
  }
  if (in.tasks) {
    std::vector<eval::TaskResult> results;
    for (const auto& t : in.task_files) results.push_back(eval::task_evaluate(model, t, c.tasks));
    entry["tasks"] = eval::tasks_report_json(results, c.tasks, c.avg_metric);
  }
  if (in.passkey) entry["passkey"] = eval::passkey_report_json(eval::passkey_evaluate(model, c.passkey));
  if (in.ruler) {
    eval::RulerData data = in.ruler_data;
    eval::ruler_data_words_default(data, *model.tokenizer);
    entry["ruler"] = eval::ruler_report_json(eval::ruler_evaluate(model, data, r.options));
  }
  return entry;
}

void compare_run(const EvalDeviceArgs& a, CompareArgs& c, RulerArgs& r) {
  const CompareInputs in = compare_inputs_read(a, c, r);
  // The KL reference stays loaded beside each model in turn.
  std::optional<eval::EvalModel> kl_reference;
  if (!c.kl_to.empty()) {
    const auto at = std::find(c.names.begin(), c.names.end(), c.kl_to) - c.names.begin();
    kl_reference.emplace(eval::eval_model_load(c.models[static_cast<size_t>(at)], a.device, a.dtype, in.memory));
  }
  nlohmann::json models = nlohmann::json::array();
  for (size_t m = 0; m < c.models.size(); ++m) {
    if (!a.quiet) std::cerr << "[compare] " << c.names[m] << ": " << c.models[m] << std::endl;
    const auto model = eval::eval_model_load(c.models[m], a.device, a.dtype, in.memory);
    nlohmann::json entry = {{"name", c.names[m]}, {"path", c.models[m]}, {"device", model.device_name},
                            {"dtype", model.dtype_name}};
    entry.update(compare_model_evaluate(model, c, r, in, kl_reference ? &*kl_reference : nullptr));
    models.push_back(entry);
  }
  nlohmann::json report = {{"reference", in.reference}, {"models", models}};
  if (!c.kl_to.empty()) report["kl_to"] = c.kl_to;
  report = eval::compare_recovery_add(report);
  eval_report_emit(a.output, eval::compare_report_markdown(report), report);
  if (!a.output.empty() && eval_writes()) plot_run({"compare", a.output + ".json", "-o", a.output}, a.quiet);
}

}  // namespace

void eval_compare_register(CLI::App& eval) {
  auto a = std::make_shared<EvalDeviceArgs>();
  auto c = std::make_shared<CompareArgs>();
  auto r = std::make_shared<RulerArgs>();
  CLI::App* sub = eval.add_subcommand("compare", "Several models side by side: ppl, tasks, passkey, RULER");
  compare_options_add(sub, *a, *c, *r);
  sub->callback([a, c, r] { compare_run(*a, *c, *r); });
}

}  // namespace linear_ard::cli
