#!/usr/bin/env bash
# Copies the header-only C++ libraries the io layer needs (nlohmann-json) from this Debian machine
# into .devdeps/ (git-ignored), for the GPU machine whose image lacks Debian's -dev packages.
# Then carry it: device run with carry [".devdeps"]; scripts/gpu_check.sh picks it up.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dst="$root/.devdeps"
rm -rf "$dst" && mkdir -p "$dst/include" "$dst/share/cmake"
cp -r /usr/include/nlohmann "$dst/include/"
cp -r /usr/share/cmake/nlohmann_json "$dst/share/cmake/"
du -sh "$dst"
