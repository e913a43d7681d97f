// model_path: a model argument (a folder, or a Hugging Face hub name `org/name[@revision]`) turned
// into the folder to load, through the local Hugging Face cache only (no network).
#pragma once

#include <string>

namespace linear_ard::io {

// The hub cache folder huggingface_hub uses: $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else
// $HF_HOME/hub, else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::string hf_hub_cache_dir();

// `arg` when it names an existing path (a local folder wins over a hub name). Otherwise, when it is
// a hub repo id (`name` or `org/name`: ASCII letters, digits, '-', '_', '.', at most 96 characters
// each, no "--" or "..") with an optional `@revision`, the snapshot folder huggingface_hub wrote for
// it: <cache>/models--org--name/snapshots/<hash>, <hash> read from refs/<revision> (default `main`)
// or the revision itself when it is a 40-hex commit. Throws std::invalid_argument with one line
// naming what was looked for and where, and, for a hub name, the command that downloads it.
std::string model_path_resolve(const std::string& arg);

}  // namespace linear_ard::io
