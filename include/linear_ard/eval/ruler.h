// RULER evaluation: every chosen task at every chosen length, `samples` seeded samples each,
// greedy decoding with the KV cache, string_match_all / string_match_part scores, prefill and
// decode throughput, and the report (paper Appendix G: task x length table, Avg. per length,
// Avg. all).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "linear_ard/eval/eval_model.h"
#include "linear_ard/eval/ruler_data.h"
#include "linear_ard/eval/ruler_prepared.h"
#include "linear_ard/eval/ruler_task.h"

namespace linear_ard::eval {

struct RulerOptions {
  std::vector<std::string> tasks;  // names from ruler_tasks()
  std::vector<int64_t> lengths;
  int64_t samples = 10;  // per task and length
  uint64_t seed = 42;
  bool progress = false;  // one line per sample on stderr
  // RULER-prepared files: when given, their samples (one cell per file) are evaluated instead of
  // generated ones, and tasks, lengths, samples and seed are not used.
  std::vector<RulerPrepared> prepared;
};

struct RulerCell {
  std::string task;
  int64_t length = 0;
  double score = 0;  // mean over samples of the task's metric, in %
  std::vector<RulerSample> samples;
  std::vector<std::string> outputs;  // generated text (special tokens skipped)
  std::vector<std::vector<int32_t>> output_ids;  // generated ids (EOS and padding included)
  std::vector<double> scores;        // per sample, in %
};

struct RulerResult {
  std::vector<std::string> tasks;
  std::vector<int64_t> lengths;
  std::vector<RulerCell> cells;  // task-major, lengths in order
  int64_t prefill_tokens = 0, decode_tokens = 0;
  double prefill_seconds = 0, decode_seconds = 0;
};

// The seed of one sample: a function of (seed, task name, length, sample index) only, so adding a
// task or a length leaves the other samples unchanged.
uint64_t ruler_sample_seed(uint64_t seed, const std::string& task, int64_t length, int64_t index);

// Builds every sample first (so bad options or a too-short length fail before any decoding), or
// takes options.prepared's, then generates and scores them.
RulerResult ruler_evaluate(const EvalModel& model, const RulerData& data, const RulerOptions& options);

// {"tasks": [...], "lengths": [...], "scores": {task: {length: %}}, "avg": {length: % (mean over the
//  tasks at that length)}, "avg_all" (mean over the cells),
//  "prefill_tokens_per_s", "decode_tokens_per_s", "samples": [...prompts, answers, outputs...]}.
nlohmann::json ruler_report_json(const RulerResult& result);

// Appendix G's layout: one row per task, one column per (model, length), then Avg. per length and
// Avg. all. `reports` are ruler_report_json values of the models in `names`.
std::string ruler_report_markdown(const std::vector<std::string>& names, const std::vector<nlohmann::json>& reports);

}  // namespace linear_ard::eval
