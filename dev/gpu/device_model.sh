#!/usr/bin/env bash
# On the GPU machine: the default real model (SmolLM2-135M-Instruct) as an HF folder, for every GPU
# script that needs it. The GGUF arrives in three parts over back-to-back calls (made here by
# dev/gpu/device_model_pack.sh, carried as .devmodel/part.a?); each call's part is kept in
# $DEVICE_MODEL_STORE (default ~/linear-ard-model, outside the working tree, so it survives between
# calls while the machine stays warm). Once all three are there they are joined, checked against the
# SHA-256 of the installed wheel's GGUF, and imported with scripts/import_gguf.py (the `gguf` wheel
# carried in .devmodel/common is installed first). Prints the folder; exits 3 (naming the parts
# still missing) when the machine is new and parts must be sent again.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
store="${DEVICE_MODEL_STORE:-$HOME/linear-ard-model}"
gguf="$store/SmolLM2-135M-Instruct.Q4_1.gguf"
folder="$store/SmolLM2-135M-Instruct"
mkdir -p "$store"
for p in "$root"/.devmodel/part.a? "$root"/.devmodel/common/sha256; do
  [[ -f "$p" ]] && cp "$p" "$store/"
done
if [[ ! -f "$gguf" ]]; then
  missing=()
  for p in aa ab ac; do [[ -f "$store/part.$p" ]] || missing+=("part.$p"); done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "device_model: still missing ${missing[*]} (a new machine: carry .devmodel/part.aa, .ab, .ac in back-to-back calls)" >&2
    exit 3
  fi
  cat "$store"/part.aa "$store"/part.ab "$store"/part.ac >"$gguf.tmp"
  if [[ "$(sha256sum "$gguf.tmp" | cut -d' ' -f1)" != "$(cat "$store/sha256")" ]]; then
    rm -f "$gguf.tmp" "$store"/part.a?
    echo "device_model: the joined GGUF's SHA-256 does not match; parts removed, send them again" >&2
    exit 3
  fi
  mv "$gguf.tmp" "$gguf"
fi
if [[ ! -f "$folder/config.json" ]]; then
  python3 -c "import gguf" 2>/dev/null || python3 -m pip install -q --no-deps "$root"/.devmodel/common/gguf-*.whl >&2
  python3 "$root/scripts/import_gguf.py" "$gguf" "$folder" --force >&2
fi
echo "$folder"
