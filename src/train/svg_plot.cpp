// svg_plot: stacked line-plot panels as a standalone SVG document.
#include "linear_ard/train/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace linear_ard::train {
namespace {

constexpr double kWidth = 720, kPanelHeight = 240, kLeft = 70, kRight = 170, kTop = 30, kBottom = 40;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2"};

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '&') out += "&amp;";
    else if (ch == '<') out += "&lt;";
    else if (ch == '>') out += "&gt;";
    else if (ch == '"') out += "&quot;";
    else out += ch;
  }
  return out;
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", x);
  return buf;
}

std::string panel_render(const SvgPanel& panel, double y0, const std::string& x_label) {
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  for (const auto& s : panel.series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      if (!std::isfinite(s.x[i]) || !std::isfinite(s.y[i])) continue;
      xmin = std::min(xmin, s.x[i]), xmax = std::max(xmax, s.x[i]);
      ymin = std::min(ymin, s.y[i]), ymax = std::max(ymax, s.y[i]);
    }
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1, ymin = 0, ymax = 1;
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax == ymin) ymax = ymin + 1;
  const double pad = 0.05 * (ymax - ymin);
  ymin -= pad, ymax += pad;
  const double w = kWidth - kLeft - kRight, h = kPanelHeight - kTop - kBottom;
  const auto px = [&](double x) { return kLeft + (x - xmin) / (xmax - xmin) * w; };
  const auto py = [&](double y) { return y0 + kTop + (1 - (y - ymin) / (ymax - ymin)) * h; };

  std::string out = "<g>\n<text x=\"" + num(kLeft) + "\" y=\"" + num(y0 + 18) +
                    "\" font-size=\"14\" font-weight=\"bold\">" + xml_escape(panel.title) + "</text>\n";
  out += "<rect x=\"" + num(kLeft) + "\" y=\"" + num(y0 + kTop) + "\" width=\"" + num(w) + "\" height=\"" +
         num(h) + "\" fill=\"none\" stroke=\"#444\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double yv = ymin + (ymax - ymin) * i / 4, xv = xmin + (xmax - xmin) * i / 4;
    out += "<text x=\"" + num(kLeft - 5) + "\" y=\"" + num(py(yv) + 4) +
           "\" font-size=\"10\" text-anchor=\"end\">" + num(yv) + "</text>\n";
    out += "<text x=\"" + num(px(xv)) + "\" y=\"" + num(y0 + kTop + h + 14) +
           "\" font-size=\"10\" text-anchor=\"middle\">" + num(xv) + "</text>\n";
  }
  out += "<text x=\"" + num(kLeft + w / 2) + "\" y=\"" + num(y0 + kTop + h + 30) +
         "\" font-size=\"11\" text-anchor=\"middle\">" + xml_escape(x_label) + "</text>\n";
  for (size_t k = 0; k < panel.series.size(); ++k) {
    const SvgSeries& s = panel.series[k];
    const char* color = kColors[k % (sizeof kColors / sizeof kColors[0])];
    std::string points;
    for (size_t i = 0; i < s.x.size(); ++i)
      if (std::isfinite(s.x[i]) && std::isfinite(s.y[i])) points += num(px(s.x[i])) + "," + num(py(s.y[i])) + " ";
    out += "<polyline fill=\"none\" stroke=\"" + std::string(color) + "\" stroke-width=\"1.5\" points=\"" + points + "\"/>\n";
    const double ly = y0 + kTop + 12 + 16 * static_cast<double>(k);
    out += "<line x1=\"" + num(kLeft + w + 10) + "\" y1=\"" + num(ly - 4) + "\" x2=\"" + num(kLeft + w + 30) +
           "\" y2=\"" + num(ly - 4) + "\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    out += "<text x=\"" + num(kLeft + w + 35) + "\" y=\"" + num(ly) + "\" font-size=\"11\">" + xml_escape(s.name) + "</text>\n";
  }
  return out + "</g>\n";
}

}  // namespace

std::string svg_plot_render(const std::vector<SvgPanel>& panels, const std::string& x_label) {
  const double height = kPanelHeight * static_cast<double>(std::max<size_t>(panels.size(), 1));
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" +
                    num(kWidth) + "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(kWidth) + " " + num(height) +
                    "\" font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  for (size_t i = 0; i < panels.size(); ++i) out += panel_render(panels[i], kPanelHeight * static_cast<double>(i), x_label);
  return out + "</svg>\n";
}

}  // namespace linear_ard::train
