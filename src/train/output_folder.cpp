// output_folder: refuses to clobber anything but a previous run's folder.
#include "output_folder.h"

#include <filesystem>
#include <stdexcept>

namespace linear_ard::train {

namespace fs = std::filesystem;

void output_prepare(const RestoreConfig& c) {
  const fs::path out(c.output);
  if (fs::exists(out)) {
    if (!fs::is_directory(out)) throw std::invalid_argument("output " + c.output + " exists and is not a folder");
    if (!fs::is_empty(out)) {
      if (!c.overwrite)
        throw std::invalid_argument("output " + c.output + " exists and is not empty (set overwrite=true to replace a previous run)");
      if (!fs::exists(out / "resolved_config.yaml"))
        throw std::invalid_argument("output " + c.output + " is not a previous restore run's folder (no resolved_config.yaml); refusing to overwrite it");
      fs::remove_all(out);
    }
  }
  fs::create_directories(out);
}

}  // namespace linear_ard::train
