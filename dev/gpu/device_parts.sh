#!/usr/bin/env bash
# A file larger than one device call may carry (64 MiB), sent in parts over back-to-back calls: e.g.
# the large corpus's experiment data (docs/results.md, experiments/make_corpus_large.sh), ~68 MiB as .tar.xz.
#   dev/gpu/device_parts.sh split FILE DIR [PART_MIB]
#       here: FILE as DIR/NAME.part-00, -01, ... of at most PART_MIB (default 48) and DIR/NAME.sha256
#       (NAME = FILE's name; the SHA-256 line also gives the number of parts); carry DIR/NAME.part-00
#       and DIR/NAME.sha256 in the first call, one more part in each next call
#   dev/gpu/device_parts.sh join DIR STORE
#       on the GPU machine: copies the parts and SHA-256 files carried in DIR into STORE (outside the
#       working tree, so they stay while the machine is warm); for each NAME whose parts have all come,
#       joins them into STORE/NAME (checked against its SHA-256; on a mismatch the parts are removed).
#       Prints the path of every joined file; exits 3 naming the parts still missing.
set -euo pipefail

split_file() {
  local file="${1:?usage: device_parts.sh split FILE DIR [PART_MIB]}" dir="${2:?}" mib="${3:-48}" name n
  name="$(basename "$file")"
  mkdir -p "$dir"
  rm -f "$dir/$name".part-* "$dir/$name.sha256"
  split -b "${mib}M" -d -a 2 "$file" "$dir/$name.part-"
  n="$(ls "$dir/$name".part-* | wc -l)"
  echo "$(sha256sum "$file" | cut -d' ' -f1) $n" >"$dir/$name.sha256"
  ls -la "$dir/$name".*
}

# join_one STORE NAME: joins STORE/NAME from its parts when all have come; returns 3 if some have not.
join_one() {
  local store="$1" name="$2" sha n i missing=()
  [[ -f "$store/$name" ]] && { echo "$store/$name"; return 0; }
  read -r sha n <"$store/$name.sha256"
  for ((i = 0; i < n; i++)); do
    [[ -f "$store/$name.part-$(printf %02d "$i")" ]] || missing+=("$name.part-$(printf %02d "$i")")
  done
  if ((${#missing[@]})); then
    echo "device_parts: still missing ${missing[*]} (carry them in back-to-back calls)" >&2
    return 3
  fi
  cat "$store/$name".part-* >"$store/$name.tmp"
  if [[ "$(sha256sum "$store/$name.tmp" | cut -d' ' -f1)" != "$sha" ]]; then
    rm -f "$store/$name.tmp" "$store/$name".part-*
    echo "device_parts: $name does not match its SHA-256; parts removed, send them again" >&2
    return 3
  fi
  mv "$store/$name.tmp" "$store/$name" && rm -f "$store/$name".part-*
  echo "$store/$name"
}

join_all() {
  local dir="${1:?usage: device_parts.sh join DIR STORE}" store="${2:?}" f rc=0
  shopt -s nullglob
  mkdir -p "$store"
  for f in "$dir"/*.part-?? "$dir"/*.sha256; do cp "$f" "$store/"; done
  for f in "$store"/*.sha256; do join_one "$store" "$(basename "${f%.sha256}")" || rc=3; done
  return "$rc"
}

case "${1:-}" in
  split) shift; split_file "$@" ;;
  join) shift; join_all "$@" ;;
  *) echo "usage: dev/gpu/device_parts.sh split FILE DIR [PART_MIB] | join DIR STORE" >&2; exit 2 ;;
esac
