// `linear-ard export-gguf MODEL OUT.gguf [--type bf16|f16|q8_0]`: a model folder as a GGUF file for
// llama.cpp, written by scripts/export_gguf.py through llama.cpp's `gguf` package (docs/ecosystem.md).
#include <memory>
#include <stdexcept>
#include <string>

#include "commands.h"
#include "linear_ard/io/model_path.h"  // defines: model_path_resolve
#include "model_arg.h"                  // defines: model_arg_add
#include "python_run.h"                // defines: python_run, python_script, python_executable

namespace linear_ard::cli {

namespace {

struct ExportGgufArgs {
  std::string model, out, type = "bf16";
  bool force = false;
};

}  // namespace

void command_export_gguf_register(CLI::App& app) {
  auto a = std::make_shared<ExportGgufArgs>();
  CLI::App* sub = app.add_subcommand(
      "export-gguf", "Write a model folder (e.g. restore's OUT/model) as a GGUF file for llama.cpp: architecture, "
                     "context length, RoPE scaling keys, tokenizer and weights (scripts/export_gguf.py, "
                     "llama.cpp's gguf package)");
  model_arg_add(sub, a->model);
  sub->add_option("OUT", a->out, "GGUF file to write")->required();
  sub->add_option("--type", a->type, "type of the matrices (norms stay f32)")
      ->check(CLI::IsMember({"bf16", "f16", "q8_0"}))
      ->capture_default_str();
  sub->add_flag("--force", a->force, "replace an existing OUT");
  sub->callback([a] {
    std::vector<std::string> args{python_script("export_gguf.py"), io::model_path_resolve(a->model), a->out,
                                  "--type", a->type};
    if (a->force) args.push_back("--force");
    const int status = python_run(args);
    if (status < 0)
      throw std::runtime_error("could not run " + python_executable() + " " + args[0] +
                               " (set LINEAR_ARD_PYTHON to a Python with the gguf package)");
    // The script has said what went wrong on stderr, in one line: exit with its status, adding none.
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace linear_ard::cli
