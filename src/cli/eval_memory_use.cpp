// eval_memory_use: each eval subcommand's sizes for its memory plan.
#include "eval_memory_use.h"

#include <algorithm>

#include "linear_ard/eval/eval_memory.h"  // defines: eval_memory_*
#include "linear_ard/eval/ruler_task.h"   // defines: ruler_task_find

namespace linear_ard::cli {
namespace {

using eval::EvalMemoryTarget;
using eval::EvalMemoryUse;
using model::MemoryPart;

// Special tokens (BOS, EOS, a dummy-prefix piece) beyond one token a byte.
constexpr int64_t kSpecialTokens = 4;

int64_t tokens_at_most(size_t bytes) { return static_cast<int64_t>(bytes) + kSpecialTokens; }

std::string lengths_text(const std::vector<int64_t>& lengths) {
  std::string text;
  for (const int64_t n : lengths) text += (text.empty() ? "" : ", ") + std::to_string(n);
  return text;
}

}  // namespace

EvalMemoryUse ppl_memory_use(const std::vector<std::string>& docs, const std::vector<int64_t>& lengths, int64_t stride,
                             int64_t batch, bool kl) {
  std::vector<int64_t> doc_tokens;
  for (const auto& d : docs) doc_tokens.push_back(tokens_at_most(d.size()));
  const int64_t longest = doc_tokens.empty() ? 0 : *std::max_element(doc_tokens.begin(), doc_tokens.end());
  return {"eval ppl at ctx " + lengths_text(lengths) + " x batch " + std::to_string(batch),
          [doc_tokens, lengths, stride, batch, kl, longest](const EvalMemoryTarget& target) {
            std::vector<std::vector<MemoryPart>> per_ctx;
            for (const int64_t ctx : lengths) {
              const int64_t step = stride > 0 ? stride : ctx;
              int64_t windows = 0;
              for (const int64_t n : doc_tokens) windows += (n + step - 1) / step;
              const int64_t rows = std::max<int64_t>(1, std::min(batch, windows));
              per_ctx.push_back(eval::eval_memory_ppl(target, std::min(ctx, longest), rows, kl));
            }
            return eval::eval_memory_largest(per_ctx);
          }};
}

EvalMemoryUse tasks_memory_use(const std::vector<eval::TaskFile>& tasks, const eval::TaskOptions& options) {
  int64_t longest = 0, requests = 0;
  for (const auto& task : tasks) {
    const std::vector<std::string> prompts = eval::task_prompts(task, options);
    for (size_t i = 0; i < prompts.size() && i < task.docs.size(); ++i) {
      const eval::TaskDoc& doc = task.docs[i];
      size_t answer = doc.continuation.size();
      for (const auto& c : doc.choices) answer = std::max(answer, c.size());
      for (const auto& [context, continuation] : doc.requests) answer = std::max(answer, context.size() + continuation.size());
      longest = std::max(longest, tokens_at_most(prompts[i].size() + options.target_delimiter.size() + answer));
      requests += std::max<int64_t>(1, static_cast<int64_t>(std::max(doc.choices.size(), doc.requests.size())));
    }
  }
  const int64_t batch = std::max<int64_t>(1, std::min(options.batch_size, requests));
  return {"eval tasks x batch " + std::to_string(options.batch_size),
          [longest, batch, max_length = options.max_length](const EvalMemoryTarget& target) {
            const int64_t limit = max_length > 0 ? max_length : target.config->max_position_embeddings;
            return eval::eval_memory_tasks(target, std::min(longest, limit), batch);
          }};
}

EvalMemoryUse passkey_memory_use(const eval::PasskeyOptions& o) {
  const int64_t longest = *std::max_element(o.lengths.begin(), o.lengths.end());
  const int64_t prompts = static_cast<int64_t>(o.lengths.size() * o.depths.size()) * o.samples;
  return {"eval passkey at lengths " + lengths_text(o.lengths) + " (" + std::to_string(prompts) + " prompts)",
          [longest, prompts, new_tokens = o.max_new_tokens](const EvalMemoryTarget& target) {
            return eval::eval_memory_generate(target, longest, new_tokens, prompts);
          }};
}

EvalMemoryUse ruler_memory_use(const eval::RulerOptions& o) {
  int64_t longest = 0, new_tokens = 0, prompts = 0;
  if (o.prepared.empty()) {
    longest = o.lengths.empty() ? 0 : *std::max_element(o.lengths.begin(), o.lengths.end());
    prompts = static_cast<int64_t>(o.tasks.size() * o.lengths.size()) * o.samples;
  }
  for (const auto& p : o.prepared) {
    new_tokens = std::max(new_tokens, eval::ruler_task_find(p.task).max_new_tokens);
    for (const auto& s : p.samples) longest = std::max(longest, tokens_at_most(s.prompt.size()));
    prompts += static_cast<int64_t>(p.samples.size());
  }
  return {"eval ruler at lengths " + lengths_text(o.lengths) + " (" + std::to_string(prompts) + " prompts)",
          [longest, new_tokens, prompts](const EvalMemoryTarget& target) {
            return eval::eval_memory_generate(target, longest, new_tokens, prompts);
          }};
}

EvalMemoryUse memory_use_largest(const std::vector<EvalMemoryUse>& uses) {
  std::string what;
  for (const auto& u : uses) what += (what.empty() ? "" : ", ") + u.what;
  return {what, [uses](const EvalMemoryTarget& target) {
            std::vector<std::vector<MemoryPart>> all;
            for (const auto& u : uses) all.push_back(u.parts(target));
            return eval::eval_memory_largest(all);
          }};
}

}  // namespace linear_ard::cli
