// `linear-ard eval ruler MODEL --lengths ... | --prepared FILE...`: RULER's synthetic tasks for the
// model's tokenizer (or RULER-prepared samples), greedy decoding, Appendix-G table (docs/eval.md).
#include <memory>

#include "command_eval_args.h"          // defines: EvalDeviceArgs, RulerArgs, eval_report_emit
#include "linear_ard/eval/eval_model.h"  // defines: eval_model_load
#include "linear_ard/eval/ruler.h"       // defines: ruler_evaluate, ruler_report_*
#include "model_arg.h"                  // defines: model_arg_add

namespace linear_ard::cli {

void eval_ruler_register(CLI::App& eval) {
  auto model_path = std::make_shared<std::string>();
  auto a = std::make_shared<EvalDeviceArgs>();
  auto r = std::make_shared<RulerArgs>();
  CLI::App* sub = eval.add_subcommand(
      "ruler", "RULER synthetic tasks at chosen lengths (or RULER-prepared JSONL samples), greedy decoding");
  model_arg_add(sub, *model_path);
  eval_device_args_add(sub, *a);
  ruler_args_add(sub, *r, "");
  sub->callback([model_path, a, r] {
    eval::RulerData data = ruler_args_resolve(*r, a->quiet);
    const auto model = eval::eval_model_load(*model_path, a->device, a->dtype);
    eval::ruler_data_words_default(data, *model.tokenizer);
    const auto result = eval::ruler_evaluate(model, data, r->options);
    nlohmann::json json = eval::ruler_report_json(result);
    json["model"] = *model_path;
    json["device"] = model.device_name;
    json["dtype"] = model.dtype_name;
    if (r->prepared.empty()) {
      json["seed"] = r->options.seed;
      json["haystack"] = r->haystack.empty() ? "noise" : r->haystack;
    } else {
      json["prepared"] = r->prepared;
    }
    eval_report_emit(a->output, eval::ruler_report_markdown({*model_path}, {json}), json);
  });
}

}  // namespace linear_ard::cli
