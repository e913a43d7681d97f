// training_curves: metrics.jsonl records -> the three panels of training_curves.svg.
#include "training_curves.h"

#include <map>

#include "linear_ard/train/svg_plot.h"  // defines: svg_plot_render, SvgPanel, SvgSeries

namespace linear_ard::train {

std::string training_curves_render(const std::vector<nlohmann::json>& records) {
  SvgPanel loss{"training loss (optimised)", {}}, parts{"loss parts (per relation / objective)", {}},
      monitors{"held-out: relation loss, monitored logit KL and attention-map KL", {}};
  std::map<std::string, SvgSeries> by_name;
  std::vector<std::string> order;
  const auto add = [&](const std::string& name, double x, double y) {
    if (!by_name.count(name)) order.push_back(name), by_name[name].name = name;
    by_name[name].x.push_back(x);
    by_name[name].y.push_back(y);
  };
  for (const auto& r : records) {
    const double step = r.at("step").get<double>();
    if (r.value("eval", false)) {
      for (const char* k : {"relation_loss", "logit_kl", "attention_kl", "loss_lm"})
        if (r.contains(k)) add(std::string("eval ") + k, step, r.at(k).get<double>());
      continue;
    }
    add("loss (stage " + std::to_string(r.value("stage", 1)) + ")", step, r.at("loss").get<double>());
    for (const auto& [k, v] : r.items())
      if (k.rfind("loss_", 0) == 0) add(k, step, v.get<double>());
  }
  for (const auto& name : order) {
    SvgPanel& panel = name.rfind("eval ", 0) == 0 ? monitors : name.rfind("loss (", 0) == 0 ? loss : parts;
    panel.series.push_back(by_name[name]);
  }
  return svg_plot_render({loss, parts, monitors}, "optimizer step");
}

}  // namespace linear_ard::train
