// output_folder: the folder a training run writes, made ready without clobbering anything but a
// previous run's outputs. Private to src/train.
#pragma once

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// Creates config.output, or empties it when it holds a previous run (resolved_config.yaml) and
// config.overwrite is set; throws std::invalid_argument naming the folder otherwise.
void output_prepare(const RestoreConfig& config);

}  // namespace linear_ard::train
