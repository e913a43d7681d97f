// `linear-ard tokenizer-train --data FILE... --vocab-size N --output DIR`: a SentencePiece BPE
// tokenizer trained on text, written as an HF tokenizer folder (docs/pretrain.md).
#include <cstdio>
#include <memory>

#include "arg_checks.h"  // defines: int_at_least, number_in
#include "commands.h"
#include "linear_ard/io/tokenizer.h"        // defines: tokenizer_load
#include "linear_ard/io/tokenizer_train.h"  // defines: tokenizer_train

namespace linear_ard::cli {

void command_tokenizer_train_register(CLI::App& app) {
  auto o = std::make_shared<io::TokenizerTrainOptions>();
  auto output = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "tokenizer-train", "Train a SentencePiece BPE tokenizer (byte fallback) on text/JSONL files; writes "
                         "tokenizer.model, tokenizer.json and tokenizer_config.json (transformers loads the folder)");
  sub->add_option("--data", o->files, "text data: .jsonl / .json records or plain-text files (docs/pretrain.md)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->add_option("--text-field", o->field, "key of the text in JSON records (dotted for nested objects)")
      ->capture_default_str();
  sub->add_option("--output,-o", *output, "output folder")->required();
  sub->add_option("--vocab-size", o->vocab_size, "vocabulary size (3 specials and 256 byte pieces included)")
      ->check(int_at_least(300))->capture_default_str();
  sub->add_option("--max-sentences", o->max_sentences, "lines sampled for training; 0: all")
      ->check(int_at_least(0))->capture_default_str();
  sub->add_option("--threads", o->threads, "trainer threads; 0: all cores")->check(int_at_least(0))->capture_default_str();
  sub->add_option("--seed", o->seed, "sampling seed")->capture_default_str();
  sub->add_option("--character-coverage", o->character_coverage, "share of characters given their own piece")
      ->check(number_in(0, 1, /*lo_open=*/true))->capture_default_str();
  sub->add_flag("--overwrite", o->overwrite, "replace a non-empty output folder");
  sub->callback([o, output] {
    std::printf("tokenizer-train: training a %d-piece BPE on %zu file(s)\n", o->vocab_size, o->files.size());
    std::fflush(stdout);
    const auto r = io::tokenizer_train(*o, *output);
    const auto tok = io::tokenizer_load(*output);
    std::printf("tokenizer-train: %d pieces from %ld lines in %.1f s; wrote %s (bos %d, eos %d)\n", r.vocab_size,
                static_cast<long>(r.lines), r.seconds, output->c_str(), tok->bos_id(), tok->eos_id());
  });
}

}  // namespace linear_ard::cli
