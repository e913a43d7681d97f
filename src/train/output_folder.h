// output_folder: the folder a training run writes: locked against a second run, marked as a run's
// own (.linear-ard-run), made ready without touching anything but what a run writes, cleared of an
// interrupted run's temporaries. Private to src/train.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// The lock file a run holds in its output folder (flock, released when the process ends, however).
constexpr const char* output_lock_name = "run.lock";
// The marker a run writes first into a folder it takes over (JSON: the run's identity and, for
// resume, the inputs it read): only a folder holding it is emptied by overwrite=true or a resumed
// run without a checkpoint, and then only of the entries a run writes (output_entry_owned).
constexpr const char* output_marker_name = ".linear-ard-run";

// Creates `folder` when needed and takes an exclusive flock on <folder>/run.lock, which then holds
// this process's pid. Throws std::invalid_argument naming the holder's pid when another process
// holds it (two runs on one folder would mix their outputs or train from one checkpoint twice).
// A run refused after taking the lock leaves nothing behind: when the folder holds no marker at
// destruction, the lock file goes if this lock created it, and the folder if it created it and it
// is empty.
class OutputLock {
 public:
  explicit OutputLock(const std::string& folder);
  ~OutputLock();
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;

 private:
  std::string folder_;
  int fd_ = -1;
  bool created_folder_ = false, created_lock_ = false;
};

// Whether an entry of an output folder is one a run writes: the marker, run.lock,
// resolved_config.yaml, metrics.jsonl, training_summary.json, model/, scaled/, adapters/, profile/,
// training_curves.{png,svg}, checkpoint-<step>/, and the temporaries of any of them (<name>.tmp,
// <name>.tmp.<pid>, <name>.old.<pid>).
bool output_entry_owned(const std::string& name);

// The marker of `folder`, or nullopt when it holds none; throws std::invalid_argument naming it
// when it is not a JSON object.
std::optional<nlohmann::json> output_marker_read(const std::string& folder);
// Writes `marker` (with a fresh "run" id when it has none) atomically as the folder's marker.
void output_marker_write(const std::string& folder, nlohmann::json marker);

// Makes config.output (locked) ready for a fresh run and marks it with `marker`: an empty folder
// (but for the lock and a marker's temporaries) is taken as is; a marked one is emptied of what a
// run writes when config.overwrite is set or config.resume found no checkpoint to continue (the
// interrupted attempt is discarded whole), other entries kept and named in a warning; anything else
// throws std::invalid_argument naming the folder and what to do.
void output_prepare(const RestoreConfig& config, const nlohmann::json& marker = nlohmann::json::object());

// Removes what an interrupted run left half-written in `folder` (locked): the temporaries of the
// entries a run writes (hf_folder_save's model.tmp.<pid>/, file_write_atomic's files, the adapters'
// and checkpoints' .tmp folders). Returns how many it removed.
int output_stale_remove(const std::string& folder);

}  // namespace linear_ard::train
