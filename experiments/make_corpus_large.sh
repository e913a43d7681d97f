#!/usr/bin/env bash
# Builds the large English pretraining corpus (never committed; docs/results.md's large budget) in build/corpus_large:
# scripts/make_corpus.sh's corpus (build/corpus, built first when missing) plus the manuals,
# dictionaries and man pages of the Debian packages that experiments/make_corpus_large.py lists, fetched with
# `apt-get download` (nothing is installed) and unpacked with `dpkg-deb -x` into build/corpus_large/pkgs/.
# Writes build/corpus_large/{train,heldout}.jsonl and manifest.json as make_corpus.sh does; the test
# sources (jargon, gnu-standards) are in heldout.jsonl only, for experiments/experiment_real_data.py.
# A corpus already there from the same make_corpus_large.py version is reused.
#   experiments/make_corpus_large.sh      CORPUS_DIR=elsewhere BASE_CORPUS_DIR=build/corpus experiments/make_corpus_large.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${CORPUS_DIR:-$root/build/corpus_large}"
base="${BASE_CORPUS_DIR:-$root/build/corpus}"

version="$(sed -n 's/^VERSION = \([0-9]*\).*/\1/p' "$root/experiments/make_corpus_large.py")"
if [ -f "$out/train.jsonl" ] && [ -f "$out/heldout.jsonl" ] &&
   python3 -c "import json,sys; sys.exit(json.load(open('$out/manifest.json')).get('version') != $version)" 2>/dev/null; then
  echo "make_corpus_large: $out is up to date (version $version)"
  exit 0
fi

CORPUS_DIR="$base" "$root/scripts/make_corpus.sh"

needed="$(cd "$root/scripts" && python3 -c "import make_corpus_large as m; print(' '.join(m.packages_needed()))")"
read -ra packages <<< "$needed"
mkdir -p "$out/debs" "$out/pkgs"
missing=()
for p in "${packages[@]}"; do
  [ -d "$out/pkgs/$p" ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "make_corpus_large: downloading ${#missing[@]} Debian packages"
  (cd "$out/debs" && apt-get download -q "${missing[@]}")
  for p in "${missing[@]}"; do
    dpkg-deb -x "$(ls "$out/debs/${p}"_*.deb | head -1)" "$out/pkgs/$p.tmp" && mv "$out/pkgs/$p.tmp" "$out/pkgs/$p"
  done
fi

start=$(date +%s)
python3 "$root/experiments/make_corpus_large.py" "$base" "$out/pkgs" "$out"
echo "make_corpus_large: took $(( $(date +%s) - start )) s"
