#!/usr/bin/env bash
# Builds the English pretraining corpus (never committed) in build/corpus from Debian packages:
# installs them with apt (as scripts/setup.sh does for -dev packages), then scripts/make_corpus.py
# extracts plain text (HTML through Python's html.parser) and splits it by document into
#   build/corpus/train.jsonl, build/corpus/heldout.jsonl   ({"text": ...} per line)
# plus build/corpus/manifest.json (sizes) and build/corpus/demo/ (KJV samples, see data/demo/).
# A corpus already there from the same make_corpus.py version is reused.
#   scripts/make_corpus.sh            CORPUS_DIR=elsewhere scripts/make_corpus.sh
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${CORPUS_DIR:-$root/build/corpus}"

version="$(sed -n 's/^VERSION = \([0-9]*\).*/\1/p' "$root/scripts/make_corpus.py")"
if [ -f "$out/train.jsonl" ] && [ -f "$out/heldout.jsonl" ] &&
   python3 -c "import json,sys; sys.exit(json.load(open('$out/manifest.json')).get('version') != $version)" 2>/dev/null; then
  echo "make_corpus: $out is up to date (version $version)"
  python3 -c "import json; t=json.load(open('$out/manifest.json'))['totals']; print(f\"make_corpus: train {t['train_documents']} docs, {t['train_bytes']/1e6:.1f} MB; held-out {t['heldout_documents']} docs, {t['heldout_bytes']/1e6:.2f} MB\")"
  exit 0
fi

# bible-kjv is the reader of bible-kjv-text's compressed text.
packages=(bible-kjv bible-kjv-text python3.11-doc debian-reference-en debian-faq developers-reference
          gnu-standards jargon-text fortunes)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "make_corpus: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

start=$(date +%s)
python3 "$root/scripts/make_corpus.py" "$out"
echo "make_corpus: took $(( $(date +%s) - start )) s"
