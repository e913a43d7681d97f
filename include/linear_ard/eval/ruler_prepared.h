// RULER-prepared samples: the JSONL files NVIDIA/RULER's scripts/data/prepare.py writes
// (<root>/<max_seq_length>/data/<task>/validation.jsonl), read so that published numbers and ours
// are computed on identical prompts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "linear_ard/eval/ruler_task.h"

namespace linear_ard::eval {

struct RulerPrepared {
  std::string path;
  std::string task;    // a name of ruler_tasks(): decides the new tokens and the metric
  int64_t length = 0;  // the cell's length (RULER's max_seq_length)
  std::vector<RulerSample> samples;  // prompt = input + answer_prefix, answers = outputs
};

// Reads `path`: one JSON object per non-blank line with an integer "index", a string "input", a
// list of strings "outputs", an integer "length" and a string "answer_prefix" (other keys, such as
// length_w_model_temp, are ignored). The task is the file's folder name when the file is
// validation.jsonl or test.jsonl (RULER's layout), else its name without .jsonl; `length` 0 takes
// the length from the nearest all-digit folder of the path (RULER's <max_seq_length>). Throws
// std::invalid_argument "path:line: problem", naming also an unknown task, a length it cannot find,
// and a file with no sample.
RulerPrepared ruler_prepared_read(const std::string& path, int64_t length = 0);

}  // namespace linear_ard::eval
