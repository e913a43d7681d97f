#!/usr/bin/env bash
# Prepares .devdeps/ (git-ignored) for the GPU machine, whose image has none of Debian's -dev
# packages: the header-only libraries (nlohmann-json, CLI11) copied from this Debian machine, and the
# pinned Debian source tarballs of the compiled ones (PCRE2, utf8proc, yaml-cpp, SentencePiece), which
# scripts/device_deps_build.sh builds there. Then carry it: device run with carry [".devdeps"];
# scripts/gpu_check.sh builds and uses it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dst="$root/.devdeps"
mkdir -p "$dst/include" "$dst/share/cmake" "$dst/src"
rm -rf "$dst/include/nlohmann" "$dst/include/CLI" "$dst/share/cmake/nlohmann_json" "$dst/share/cmake/CLI11"
cp -r /usr/include/nlohmann /usr/include/CLI "$dst/include/"
cp -r /usr/share/cmake/nlohmann_json "$dst/share/cmake/"
cp -r /usr/share/cmake/CLI11 "$dst/share/cmake/" 2>/dev/null || cp -r /usr/lib/cmake/CLI11 "$dst/share/cmake/"
# The same upstream versions Debian 12 ships (what CI builds against).
pool=http://deb.debian.org/debian/pool/main
for f in p/pcre2/pcre2_10.42.orig.tar.gz u/utf8proc/utf8proc_2.8.0.orig.tar.gz \
         y/yaml-cpp/yaml-cpp_0.7.0+dfsg.orig.tar.xz s/sentencepiece/sentencepiece_0.1.97.orig.tar.gz; do
  name="$(basename "$f")"
  [[ -s "$dst/src/$name" ]] || curl -fsSL --retry 3 -o "$dst/src/$name.part" "$pool/$f" \
    && { [[ -s "$dst/src/$name" ]] || mv "$dst/src/$name.part" "$dst/src/$name"; }
done
du -sh "$dst"
