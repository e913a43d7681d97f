#!/usr/bin/env bash
# On the GPU machine: the split of scripts/corpus_split.py (train/val/test.jsonl), carried packed as
# $DATA (default .devdata/real_data.tar.xz), unpacked once into FOLDER (through FOLDER.tmp, so that an
# interrupted unpack is never taken for a finished one). Prints FOLDER; exits 1 naming the archive when
# it cannot be unpacked.
#   data="$(dev/gpu/device_data.sh FOLDER)" || exit 1
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
folder="${1:?usage: dev/gpu/device_data.sh FOLDER}"
archive="${DATA:-$root/.devdata/real_data.tar.xz}"
if [[ ! -f "$folder/val.jsonl" ]]; then
  rm -rf "$folder.tmp" && mkdir -p "$folder.tmp" && tar -C "$folder.tmp" -xJf "$archive" 2>/dev/null \
    && [[ -f "$folder.tmp/val.jsonl" ]] && rm -rf "$folder" && mv "$folder.tmp" "$folder" \
    || { echo "device_data: cannot unpack the data split from $archive (train/val/test.jsonl of scripts/corpus_split.py)" >&2; exit 1; }
fi
echo "$folder"
