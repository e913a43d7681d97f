// eval_memory_use: the memory plan of each `eval` subcommand, from its arguments and the inputs it
// reads before loading a model (documents, task prompts, prompt lengths): the sizes eval_memory
// turns into parts, bounded from above where only tokenizing would tell (a token covers at least
// one byte of text, so a text of b bytes gives at most b + 4 tokens with the special ones).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/eval/eval_model.h"  // defines: EvalMemoryUse
#include "linear_ard/eval/passkey.h"     // defines: PasskeyOptions
#include "linear_ard/eval/ruler.h"       // defines: RulerOptions
#include "linear_ard/eval/task_eval.h"   // defines: TaskOptions
#include "linear_ard/eval/task_file.h"   // defines: TaskFile

namespace linear_ard::cli {

// `eval ppl` over `docs` at each of `lengths`: windows of min(ctx, longest document) tokens,
// min(batch, windows) of them per forward; with a KL reference, its forward and logits beside.
eval::EvalMemoryUse ppl_memory_use(const std::vector<std::string>& docs, const std::vector<int64_t>& lengths,
                                   int64_t stride, int64_t batch, bool kl);
// `eval tasks` of `tasks` (their prompts built with `options`): the longest request (few-shot
// prompt, delimiter and the longest answer), min(batch, requests) per forward.
eval::EvalMemoryUse tasks_memory_use(const std::vector<eval::TaskFile>& tasks, const eval::TaskOptions& options);
// `eval passkey`: the longest length with max_new_tokens, every prompt's text kept.
eval::EvalMemoryUse passkey_memory_use(const eval::PasskeyOptions& options);
// `eval ruler`: the longest length (prompt and answer) of generated samples, or the longest
// prepared prompt with its task's new tokens.
eval::EvalMemoryUse ruler_memory_use(const eval::RulerOptions& options);
// Several evaluations of one model, run one after another: the largest of their plans.
eval::EvalMemoryUse memory_use_largest(const std::vector<eval::EvalMemoryUse>& uses);

}  // namespace linear_ard::cli
