#!/usr/bin/env bash
# On the GPU machine: builds the source tarballs that dev/gpu/device_deps.sh put in .devdeps/src
# (PCRE2, utf8proc, yaml-cpp, SentencePiece) into .devdeps/prefix, once (a marker records what was built;
# ignored build outputs survive between calls while the machine stays warm). Prints the prefix.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dd="$root/.devdeps"
prefix="$dd/prefix"
[[ -d "$dd/src" ]] || { echo "device_deps_build: $dd/src missing: run dev/gpu/device_deps.sh here first" >&2; exit 1; }
# What was built, and on which system (a prefix built on another OS is never reused).
stamp="$(cd "$dd/src" && ls | sort | tr '\n' ' ')$(. /etc/os-release && echo "$ID-$VERSION_ID") $(ldd --version 2>&1 | sed -n 1p)"
if [[ -f "$prefix/.built" && "$(cat "$prefix/.built")" == "$stamp" ]]; then echo "$prefix"; exit 0; fi
work="$dd/work"
rm -rf "$work" "$prefix" && mkdir -p "$work" "$prefix"
jobs="$(nproc)"
# build_one TARBALL CMAKE_ARGS...: unpacks, configures, builds and installs one library.
build_one() {
  local tarball="$1"; shift
  local dir="$work/$(basename "$tarball" | sed 's/\.orig\.tar\..*//; s/\.tar\..*//')"
  mkdir -p "$dir" && tar xf "$dd/src/$tarball" -C "$dir" --strip-components=1
  cmake -S "$dir" -B "$dir/_build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DCMAKE_POLICY_VERSION_MINIMUM=3.5 "$@" >"$dir.log" 2>&1 \
    && cmake --build "$dir/_build" -j "$jobs" >>"$dir.log" 2>&1 \
    && cmake --install "$dir/_build" >>"$dir.log" 2>&1 \
    || { tail -30 "$dir.log" >&2; echo "device_deps_build: $tarball failed (log $dir.log)" >&2; exit 1; }
}
build_one pcre2_10.42.orig.tar.gz -DBUILD_SHARED_LIBS=ON -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_SUPPORT_UNICODE=ON \
  -DPCRE2_SUPPORT_JIT=ON -DPCRE2_BUILD_TESTS=OFF -DPCRE2_BUILD_PCRE2GREP=OFF
build_one utf8proc_2.8.0.orig.tar.gz -DBUILD_SHARED_LIBS=ON -DUTF8PROC_ENABLE_TESTING=OFF
build_one yaml-cpp_0.7.0+dfsg.orig.tar.xz -DYAML_BUILD_SHARED_LIBS=ON -DYAML_CPP_BUILD_TESTS=OFF \
  -DYAML_CPP_BUILD_TOOLS=OFF -DYAML_CPP_BUILD_CONTRIB=OFF
build_one sentencepiece_0.1.97.orig.tar.gz -DSPM_ENABLE_SHARED=ON
rm -rf "$work"
echo "$stamp" >"$prefix/.built"
echo "$prefix"
