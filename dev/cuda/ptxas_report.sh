#!/usr/bin/env bash
# Registers, spills, stack and shared memory of every relation-KL kernel the library builds, from
# nvcc -Xptxas -v (the library's flags: -O3 -std=c++17 -lineinfo), plus each object's PTX for
# diffing two trees. Runs on any machine with nvcc; no GPU.
#   dev/cuda/ptxas_report.sh OUT_DIR [SOURCE_ROOT]
# Writes OUT_DIR/ptxas.tsv (kernel, arch, registers, spill stores, spill loads, stack, static smem),
# OUT_DIR/<object>.<arch>.ptx (PTX without line information, for diffing) and
# OUT_DIR/dynamic_smem.txt (the tile structs' kSmemBytes, which ptxas does not see: a host program
# prints them); prints the tables.
set -euo pipefail
out="${1:?usage: dev/cuda/ptxas_report.sh OUT_DIR [SOURCE_ROOT]}"
root="${2:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
mkdir -p "$out"
src="$root/src/core/cuda"
flags=(-O3 -DNDEBUG -std=c++17 -lineinfo -I"$root/include" -cubin)
# object sources and the arch each one is built for: those sm90a/CMakeLists.txt lists (the wgmma and
# TMA kernels, the probe) for sm_90a alone, as the library builds them; the rest for sm_80 and sm_90,
# of which sm_90 is reported
jobs=()
for f in "$src"/relation_kl_fwd_d*.cu "$src"/relation_kl_bwd_d*.cu "$src"/relation_kl_simt.cu; do
  jobs+=("$f sm_90")
done
sm90a=$(grep -oE '\.\./relation_kl_[a-z0-9_]+\.cu' "$src/sm90a/CMakeLists.txt" | sed 's|^\.\./||')
[[ -n "$sm90a" ]] || { echo "ptxas_report: no sources listed in $src/sm90a/CMakeLists.txt" >&2; exit 1; }
for f in $sm90a; do jobs+=("$src/$f sm_90a"); done
: >"$out/ptxas.log"
for j in "${jobs[@]}"; do
  read -r f arch <<<"$j"
  base="$(basename "$f" .cu)"
  rm -rf "$out/keep" && mkdir -p "$out/keep"
  nvcc "${flags[@]}" -arch="$arch" -Xptxas -v --keep --keep-dir "$out/keep" -o "$out/keep/$base.cubin" "$f" \
    2>>"$out/ptxas.log"
  # The PTX without line information: equal PTX gives equal SASS (no cuobjdump needed).
  grep -vE '^\s*(\.loc|\.file)\b' "$out/keep/$base.ptx" >"$out/$base.$arch.ptx"
done
rm -rf "$out/keep"
# ptxas prints per entry: "Compiling entry function 'NAME' for 'ARCH'", then "N bytes stack frame,
# S bytes spill stores, L bytes spill loads", then "Used R registers, ... [M bytes smem]".
python3 - "$out" <<'PY'
import re, subprocess, sys
out = sys.argv[1]
rows, cur = set(), {}
for line in open(f"{out}/ptxas.log"):
    if m := re.search(r"Compiling entry function '([^']+)' for '(sm_\w+)'", line):
        cur = {"name": m[1], "arch": m[2]}
    elif m := re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line):
        cur.update(stack=m[1], st=m[2], ld=m[3])
    elif m := re.search(r"Used (\d+) registers", line):
        smem = re.search(r"(\d+) bytes smem", line)
        rows.add((cur["name"], cur["arch"], m[1], cur["st"], cur["ld"], cur["stack"], smem[1] if smem else "0"))
rows = sorted(rows)
names = subprocess.run(["c++filt"], input="\n".join(r[0] for r in rows), capture_output=True, text=True).stdout.split("\n")
table = sorted((n,) + r[1:] for n, r in zip(names, rows))
with open(f"{out}/ptxas.tsv", "w") as f:
    for r in table:
        f.write("\t".join(r) + "\n")
PY
printf '%-110s %-7s %5s %7s %7s %6s %6s\n' kernel arch regs spill_st spill_ld stack smem
awk -F'\t' '{ printf "%-110s %-7s %5s %7s %7s %6s %6s\n", $1, $2, $3, $4, $5, $6, $7 }' "$out/ptxas.tsv"
cat >"$out/dynamic_smem.cu" <<'CU'
#include <cstdio>
#include "relation_kl_bwd.cuh"
#include "relation_kl_bwd_wgmma.cuh"
#include "relation_kl_fwd.cuh"
#include "relation_kl_fwd_wgmma.cuh"
using namespace linear_ard::cuda;
int main() {
  std::printf("dynamic shared memory, bytes, D = 64 / 96 / 128 / 256\n");
  std::printf("forward (mma.sync)   %zu %zu %zu %zu\n", FwdTile<64>::kSmemBytes, FwdTile<96>::kSmemBytes,
              FwdTile<128>::kSmemBytes, FwdTile<256>::kSmemBytes);
  std::printf("forward (wgmma)      %zu %zu %zu -\n", FwdWgmmaTile<64, false>::kSmemBytes,
              FwdWgmmaTile<96, false>::kSmemBytes, FwdWgmmaTile<128, false>::kSmemBytes);
  std::printf("backward (mma.sync)  %zu %zu %zu %zu\n", BwdTile<64>::kSmemBytes, BwdTile<96>::kSmemBytes,
              BwdTile<128>::kSmemBytes, BwdTile<256>::kSmemBytes);
  std::printf("backward (wgmma)     %zu %zu %zu -\n", BwdWgmmaTile<64>::kSmemBytes, BwdWgmmaTile<96>::kSmemBytes,
              BwdWgmmaTile<128>::kSmemBytes);
}
CU
nvcc -std=c++17 -arch=sm_90 -I"$root/include" -I"$src" -o "$out/dynamic_smem" "$out/dynamic_smem.cu"
"$out/dynamic_smem" | tee "$out/dynamic_smem.txt"
rm -f "$out/dynamic_smem" "$out/dynamic_smem.cu"
