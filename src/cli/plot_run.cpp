// Running scripts/plot.py from the binary.
#include "plot_run.h"

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "python_run.h"  // defines: python_run, python_script, python_executable

namespace linear_ard::cli {

namespace {

namespace fs = std::filesystem;

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

}  // namespace

void plot_run(const std::vector<std::string>& args, bool quiet) {
  if (env_or("LINEAR_ARD_NO_PLOT", "0") == "1") return;
  std::vector<std::string> script_args{env_or("LINEAR_ARD_PLOT_SCRIPT", python_script("plot.py"))};
  script_args.insert(script_args.end(), args.begin(), args.end());
  std::string command = python_executable();
  for (const auto& a : script_args) command += " " + a;
  std::error_code ec;
  const int status = fs::exists(script_args[0], ec) ? python_run(script_args) : -2;
  if (status != 0) {
    std::cerr << "linear-ard: warning: the plots were not drawn (" << (status == -2 ? "cannot run it" : "the script failed")
              << "); draw them with: " << command << std::endl;
  } else if (!quiet) {
    std::cerr << "[plot] " << command << std::endl;
  }
}

void plot_training_curves(const std::string& output) {
  if (env_or("RANK", "0") != "0") return;
  const fs::path metrics = fs::path(output) / "metrics.jsonl";
  if (fs::exists(metrics)) plot_run({"curves", metrics.string(), "-o", (fs::path(output) / "training_curves").string()}, false);
}

}  // namespace linear_ard::cli
