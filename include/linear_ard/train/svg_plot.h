// svg_plot: a small dependency-free SVG writer of line plots (one panel per quantity), used for
// the training-dynamics figure `training_curves.svg`.
#pragma once

#include <string>
#include <vector>

namespace linear_ard::train {

struct SvgSeries {
  std::string name;
  std::vector<double> x, y;  // same length; non-finite points are skipped
};

struct SvgPanel {
  std::string title;
  std::vector<SvgSeries> series;
};

// Panels stacked vertically, each with linear axes fitted to its data, tick labels, a legend and
// `x_label` under the x axis. Returns the whole SVG document.
std::string svg_plot_render(const std::vector<SvgPanel>& panels, const std::string& x_label);

}  // namespace linear_ard::train
