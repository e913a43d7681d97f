#!/usr/bin/env bash
# On the GPU machine: the default real model (SmolLM2-135M-Instruct) as an HF folder, for every GPU
# script that needs it. The GGUF arrives in parts over back-to-back calls (made here by
# dev/gpu/device_model_pack.sh, carried under .devmodel/parts), collected and joined by
# dev/gpu/device_parts.sh in $DEVICE_MODEL_STORE (default ~/linear-ard-model, outside the working
# tree, so it survives between calls while the machine stays warm), then imported once with
# scripts/import_gguf.py (the `gguf` wheel carried in .devmodel/common is installed first). Prints the
# folder; exits 3 (naming the parts still missing) while parts are missing.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
store="${DEVICE_MODEL_STORE:-$HOME/linear-ard-model}"
folder="$store/SmolLM2-135M-Instruct"
if [[ ! -f "$folder/config.json" ]]; then
  gguf="$("$root/dev/gpu/device_parts.sh" join "$root/.devmodel/parts" "$store" | grep '\.gguf$')" || exit 3
  python3 -c "import gguf" 2>/dev/null || python3 -m pip install -q --no-deps "$root"/.devmodel/common/gguf-*.whl >&2
  python3 "$root/scripts/import_gguf.py" "$gguf" "$folder" --force >&2
fi
echo "$folder"
