// run_inputs: the files a run reads (the teacher's config.json, weights and tokenizer; pretrain's
// tokenizer folder and model config file; the data files), fingerprinted when the run starts and
// kept in its marker, and checked when it resumes: a run continued on other inputs than the ones it
// started from would mix two teachers or two corpora without a word. Private to src/train.
#pragma once

#include <nlohmann/json.hpp>

#include "linear_ard/train/restore_config.h"

namespace linear_ard::train {

// {"teacher": [fingerprint...], "tokenizer": [...], "data": [...], "model_config": [...]} of the
// files `config` reads now (io::file_fingerprint: size, mtime, CRC-32 of each, read through once).
nlohmann::json run_inputs_record(const RestoreConfig& config);

// The files `config` reads now against `recorded` (run_inputs_record's, from the run's marker).
// Throws std::invalid_argument "config key 'resume': the inputs changed since the run started:
// teacher file X has other contents (...); data file Y is gone; ..." naming every difference (and a
// file now read that the run did not read, or the reverse), with what to do.
void run_inputs_verify(const nlohmann::json& recorded, const RestoreConfig& config);

}  // namespace linear_ard::train
