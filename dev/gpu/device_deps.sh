#!/usr/bin/env bash
# Prepares .devdeps/ (git-ignored) for the GPU machine, whose image has none of Debian's -dev
# packages: the header-only libraries (nlohmann-json, CLI11) copied from this Debian machine, and the
# pinned Debian source tarballs of the compiled ones (PCRE2, utf8proc, yaml-cpp, SentencePiece), which
# dev/gpu/device_deps_build.sh builds there. Then carry it: device run with carry [".devdeps"];
# dev/gpu/gpu_check.sh builds and uses it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
dst="$root/.devdeps"
mkdir -p "$dst/include" "$dst/share/cmake" "$dst/src"
rm -rf "$dst/include/nlohmann" "$dst/include/CLI" "$dst/share/cmake/nlohmann_json" "$dst/share/cmake/CLI11"
cp -r /usr/include/nlohmann /usr/include/CLI "$dst/include/"
cp -r /usr/share/cmake/nlohmann_json "$dst/share/cmake/"
cp -r /usr/share/cmake/CLI11 "$dst/share/cmake/" 2>/dev/null || cp -r /usr/lib/cmake/CLI11 "$dst/share/cmake/"
# The source packages of the -dev packages this machine builds against (what CI links), fetched
# through apt's own client: a private copy of this machine's deb822 source entries with deb-src
# enabled and its own lists folder, so the system's apt state is left as it is.
apt_dir="$(mktemp -d)"
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/lists/partial" "$apt_dir/sources"
for f in /etc/apt/sources.list.d/*.sources; do
  sed 's/^Types: deb$/Types: deb deb-src/' "$f" >"$apt_dir/sources/$(basename "$f")"
done
apt_opts=(-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts="$apt_dir/sources"
          -o Dir::State::Lists="$apt_dir/lists" -o APT::Sandbox::User=root -qq)
apt-get "${apt_opts[@]}" update
# Each at the version installed here; where the archive no longer serves that revision (a security
# update's pool), the release's own revision of the same upstream tarball. Only the .orig tarballs
# are built there (device_deps_build.sh).
for dev in libpcre2-dev libutf8proc-dev libyaml-cpp-dev libsentencepiece-dev; do
  src="$(dpkg-query -W -f='${source:Package}' "$dev")"
  version="$(dpkg-query -W -f='${source:Version}' "$dev")"
  (cd "$dst/src" && { apt-get "${apt_opts[@]}" source --download-only "$src=$version" 2>/dev/null \
                       || apt-get "${apt_opts[@]}" source --download-only -t bookworm "$src"; })
  upstream="${version%-*}"
  ls "$dst/src/${src}_${upstream#*:}.orig.tar."* >/dev/null \
    || { echo "device_deps: no upstream tarball of $src $upstream was fetched" >&2; exit 1; }
done
du -sh "$dst"
