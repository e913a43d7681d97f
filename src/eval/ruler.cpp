// RULER evaluation loop, scoring and report.
#include "linear_ard/eval/ruler.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <iostream>
#include <random>
#include <stdexcept>

#include "linear_ard/dist/distributed.h"  // defines: Distributed, items_run
#include "linear_ard/eval/report.h"       // defines: markdown_table, number_text
#include "linear_ard/eval/score.h"        // defines: string_match_all, string_match_part, mean_of
#include "linear_ard/model/generate.h"    // defines: model_generate_greedy

namespace linear_ard::eval {

uint64_t ruler_sample_seed(uint64_t seed, const std::string& task, int64_t length, int64_t index) {
  // FNV-1a over the task name, then a seed_seq mix: stable across platforms and runs.
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : task) h = (h ^ c) * 1099511628211ull;
  std::seed_seq seq{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32), static_cast<uint32_t>(h),
                    static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(length), static_cast<uint32_t>(index)};
  uint32_t out[2];
  seq.generate(out, out + 2);
  return (static_cast<uint64_t>(out[0]) << 32) | out[1];
}

namespace {

void ruler_log(const RulerOptions& options, const std::string& line) {
  if (options.progress) std::cerr << "[ruler] " << line << std::endl;
}

// The cells of samples prepared beforehand (--prepared), their prompts' tokens counted for `model`.
RulerResult ruler_cells_prepared(const EvalModel& model, const RulerOptions& options) {
  RulerResult result;
  for (const auto& p : options.prepared) {
    RulerCell cell;
    cell.task = p.task;
    cell.length = p.length;
    cell.samples = p.samples;
    for (auto& s : cell.samples) s.tokens = static_cast<int64_t>(model.tokenizer->encode(s.prompt, true).size());
    if (std::find(result.tasks.begin(), result.tasks.end(), p.task) == result.tasks.end())
      result.tasks.push_back(p.task);
    if (std::find(result.lengths.begin(), result.lengths.end(), p.length) == result.lengths.end())
      result.lengths.push_back(p.length);
    result.cells.push_back(std::move(cell));
  }
  std::sort(result.lengths.begin(), result.lengths.end());
  return result;
}

// The cells of samples generated for the model's tokenizer: each task at each length.
RulerResult ruler_cells_build(const EvalModel& model, const RulerData& data, const RulerOptions& options) {
  if (options.tasks.empty() || options.lengths.empty() || options.samples < 1)
    throw std::invalid_argument("RULER needs at least one task, one length and one sample");
  RulerResult result;
  result.tasks = options.tasks;
  result.lengths = options.lengths;
  for (const auto& name : options.tasks) {
    const RulerTask& task = ruler_task_find(name);
    for (int64_t length : options.lengths) {
      RulerCell cell;
      cell.task = name;
      cell.length = length;
      for (int64_t s = 0; s < options.samples; ++s) {
        cell.samples.push_back(ruler_sample_make(task, data, *model.tokenizer, length,
                                                 ruler_sample_seed(options.seed, name, length, s)));
        cell.samples.back().index = s;
      }
      result.cells.push_back(std::move(cell));
    }
  }
  return result;
}

// One sample's greedy continuation and its prefill/decode timings.
struct RulerGenerated {
  std::vector<int32_t> ids;
  model::GenerateStats stats;
};

// Sample k of `items` (cells in task, length order; samples in order within a cell) is generated on
// rank k % world under torchrun; its ids and timings are gathered, so every rank holds every one.
std::vector<RulerGenerated> ruler_generate(const EvalModel& model, const RulerOptions& options, const RulerResult& result,
                                           const std::vector<std::pair<size_t, size_t>>& items) {
  int64_t width = 5;  // id count, prefill tokens, prefill s, decode tokens, decode s, then the ids
  for (const auto& cell : result.cells) width = std::max<int64_t>(width, 5 + ruler_task_find(cell.task).max_new_tokens);
  const dist::Distributed* distributed = model.distributed;
  const auto count = static_cast<int64_t>(items.size());
  const auto start = std::chrono::steady_clock::now();
  size_t done = 0;
  const size_t mine = distributed ? static_cast<size_t>((count - distributed->rank() + distributed->world_size() - 1) /
                                                        distributed->world_size())
                                  : items.size();
  const auto generate = [&](int64_t k) {
    const RulerCell& cell = result.cells[items[static_cast<size_t>(k)].first];
    const RulerSample& sample = cell.samples[items[static_cast<size_t>(k)].second];
    model::GenerateOptions gen;
    gen.max_new_tokens = ruler_task_find(cell.task).max_new_tokens;
    if (model.tokenizer->eos_id() >= 0) gen.eos_token_ids = {model.tokenizer->eos_id()};
    const auto ids = model.tokenizer->encode(sample.prompt, true);
    const auto prompt =
        torch::tensor(std::vector<int64_t>(ids.begin(), ids.end()), torch::kLong).unsqueeze(0).to(model.device);
    model::GenerateStats stats;
    const auto out = model::model_generate_greedy(model.weights, model.rope, model.overrides, prompt, gen, &stats);
    const auto new_ids = out[0].slice(0, prompt.size(1)).cpu().contiguous();
    ++done;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    char line[256];
    std::snprintf(line, sizeof line, "%zu/%zu %s @%lld: %lld tokens (%.0fs elapsed, ~%.0fs left)", done, mine,
                  cell.task.c_str(), static_cast<long long>(cell.length), static_cast<long long>(sample.tokens),
                  elapsed, elapsed / static_cast<double>(done) * static_cast<double>(mine - done));
    ruler_log(options, line);
    std::vector<double> item{static_cast<double>(new_ids.numel()), static_cast<double>(stats.prefill_tokens),
                             stats.prefill_seconds, static_cast<double>(stats.decode_tokens), stats.decode_seconds};
    item.insert(item.end(), new_ids.data_ptr<int64_t>(), new_ids.data_ptr<int64_t>() + new_ids.numel());
    return item;
  };
  const std::vector<double> all = dist::items_run(distributed, count, width, generate);
  std::vector<RulerGenerated> generated(items.size());
  for (int64_t k = 0; k < count; ++k) {
    const double* item = all.data() + k * width;
    RulerGenerated& g = generated[static_cast<size_t>(k)];
    g.ids.assign(item + 5, item + 5 + static_cast<int64_t>(item[0]));
    g.stats.prefill_tokens = static_cast<int64_t>(item[1]);
    g.stats.prefill_seconds = item[2];
    g.stats.decode_tokens = static_cast<int64_t>(item[3]);
    g.stats.decode_seconds = item[4];
  }
  return generated;
}

}  // namespace

RulerResult ruler_evaluate(const EvalModel& model, const RulerData& data, const RulerOptions& options) {
  RulerResult result = options.prepared.empty() ? ruler_cells_build(model, data, options)
                                                : ruler_cells_prepared(model, options);
  size_t built = 0;
  for (const auto& cell : result.cells) built += cell.samples.size();
  for (int64_t length : result.lengths) eval_context_warn(model, length, "RULER prompts");
  ruler_log(options, "built " + std::to_string(built) + " samples");
  std::vector<std::pair<size_t, size_t>> items;  // (cell, sample)
  for (size_t c = 0; c < result.cells.size(); ++c)
    for (size_t i = 0; i < result.cells[c].samples.size(); ++i) items.emplace_back(c, i);
  const std::vector<RulerGenerated> generated = ruler_generate(model, options, result, items);
  model::GenerateStats stats;
  for (size_t k = 0; k < items.size(); ++k) {
    const RulerGenerated& g = generated[k];
    RulerCell& cell = result.cells[items[k].first];
    const RulerSample& sample = cell.samples[items[k].second];
    const RulerTask& task = ruler_task_find(cell.task);
    const std::string text = model.tokenizer->decode(g.ids, /*skip_special_tokens=*/true);
    const std::string clean = ruler_prediction_clean(text);
    cell.scores.push_back(100 * (task.match_part ? string_match_part(clean, sample.answers)
                                                 : string_match_all(clean, sample.answers)));
    cell.outputs.push_back(text);
    cell.output_ids.push_back(g.ids);
    stats.prefill_tokens += g.stats.prefill_tokens;
    stats.prefill_seconds += g.stats.prefill_seconds;
    stats.decode_tokens += g.stats.decode_tokens;
    stats.decode_seconds += g.stats.decode_seconds;
  }
  for (auto& cell : result.cells) cell.score = mean_of(cell.scores);
  result.prefill_tokens = stats.prefill_tokens;
  result.prefill_seconds = stats.prefill_seconds;
  result.decode_tokens = stats.decode_tokens;
  result.decode_seconds = stats.decode_seconds;
  return result;
}

nlohmann::json ruler_report_json(const RulerResult& r) {
  nlohmann::json scores = nlohmann::json::object(), avg = nlohmann::json::object(), samples = nlohmann::json::array();
  double all = 0;
  for (int64_t length : r.lengths) {
    double sum = 0;
    int64_t cells = 0;
    for (const auto& c : r.cells)
      if (c.length == length) sum += c.score, ++cells;
    avg[std::to_string(length)] = sum / static_cast<double>(cells);
    all += sum;
  }
  for (const auto& c : r.cells) {
    scores[c.task][std::to_string(c.length)] = c.score;
    for (size_t i = 0; i < c.samples.size(); ++i) {
      const auto& s = c.samples[i];
      samples.push_back({{"task", c.task}, {"length", c.length}, {"index", s.index}, {"tokens", s.tokens},
                         {"haystack", s.haystack}, {"haystack_type", s.haystack_type}, {"prompt", s.prompt},
                         {"answers", s.answers}, {"output", c.outputs[i]}, {"output_ids", c.output_ids[i]},
                         {"score", c.scores[i]}});
    }
  }
  const auto rate = [](int64_t t, double s) { return s > 0 ? static_cast<double>(t) / s : 0.0; };
  return {{"tasks", r.tasks},
          {"lengths", r.lengths},
          {"scores", scores},
          {"avg", avg},
          {"avg_all", r.cells.empty() ? 0.0 : all / static_cast<double>(r.cells.size())},
          {"prefill_tokens", r.prefill_tokens},
          {"prefill_seconds", r.prefill_seconds},
          {"prefill_tokens_per_s", rate(r.prefill_tokens, r.prefill_seconds)},
          {"decode_tokens", r.decode_tokens},
          {"decode_seconds", r.decode_seconds},
          {"decode_tokens_per_s", rate(r.decode_tokens, r.decode_seconds)},
          {"samples", samples}};
}

std::string ruler_report_markdown(const std::vector<std::string>& names, const std::vector<nlohmann::json>& reports) {
  std::vector<std::string> header{"task"};
  for (size_t m = 0; m < reports.size(); ++m)
    for (const auto& l : reports[m].at("lengths"))
      header.push_back((reports.size() > 1 ? names[m] + " " : std::string()) + std::to_string(l.get<int64_t>()));
  std::vector<std::vector<std::string>> rows;
  for (const auto& t : reports.at(0).at("tasks")) {
    const std::string task = t.get<std::string>();
    std::vector<std::string> row{task};
    for (const auto& r : reports)
      for (const auto& l : r.at("lengths")) {
        const std::string key = std::to_string(l.get<int64_t>());
        const auto& s = r.at("scores");
        row.push_back(s.contains(task) && s[task].contains(key) ? number_text(s[task][key].get<double>(), 1) : "-");
      }
    rows.push_back(std::move(row));
  }
  std::vector<std::string> avg{"Avg."}, all{"Avg. all"}, pre{"prefill tok/s"}, dec{"decode tok/s"};
  for (const auto& r : reports)
    for (const auto& l : r.at("lengths")) {
      const bool first = l == r.at("lengths").front();
      avg.push_back(number_text(r.at("avg").at(std::to_string(l.get<int64_t>())).get<double>(), 1));
      all.push_back(first ? number_text(r.at("avg_all").get<double>(), 1) : "");
      pre.push_back(first ? number_text(r.at("prefill_tokens_per_s").get<double>(), 0) : "");
      dec.push_back(first ? number_text(r.at("decode_tokens_per_s").get<double>(), 1) : "");
    }
  rows.push_back(avg);
  rows.push_back(all);
  rows.push_back(pre);
  rows.push_back(dec);
  return markdown_table(header, rows);
}

}  // namespace linear_ard::eval
