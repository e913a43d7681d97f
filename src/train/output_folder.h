// output_folder: the folder a training run writes: locked against a second run, made ready without
// clobbering anything but a previous run's outputs, cleared of an interrupted run's temporaries.
// Private to src/train.
#pragma once

#include <string>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// The lock file a run holds in its output folder (flock, released when the process ends, however).
constexpr const char* output_lock_name = "run.lock";

// Creates `folder` when needed and takes an exclusive flock on <folder>/run.lock, which then holds
// this process's pid. Throws std::invalid_argument naming the holder's pid when another process
// holds it (two runs on one folder would mix their outputs or train from one checkpoint twice).
class OutputLock {
 public:
  explicit OutputLock(const std::string& folder);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  int fd_ = -1;
};

// Makes config.output (locked) ready for a fresh run: empty but for the lock, or emptied when it
// holds a previous run (resolved_config.yaml) and config.overwrite is set; throws
// std::invalid_argument naming the folder otherwise.
void output_prepare(const RestoreConfig& config);

// Removes what an interrupted run left half-written in `folder` (locked): `<name>.tmp` and
// `<name>.tmp.<pid>` entries (hf_folder_save's model.tmp.<pid>/, file_write_atomic's files, the
// adapters' and checkpoints' .tmp folders). Returns how many it removed.
int output_stale_remove(const std::string& folder);

}  // namespace linear_ard::train
