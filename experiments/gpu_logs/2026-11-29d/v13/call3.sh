export PREBUILT=.devpack/devbin.tar.xz; source scripts/gpu_binaries.sh >/dev/null; gpu_binaries relation_kl_dev >/dev/null || exit 1; rk="$build/dev/cuda/relation_kl"
for c in 3:3 2:3 3:1; do s=${c%%:*}; tv=${c#*:}; LINEAR_ARD_BWD13_STAGES=$s LINEAR_ARD_BWD13_TURNS=$tv timeout 50 "$rk" backward 13 > $OUT/b13_s${s}_t$tv.txt 2>&1; echo "13 S=$s T=$tv rc=$? ok $(grep -c '^ok' $OUT/b13_s${s}_t$tv.txt) FAIL $(grep -c '^FAIL' $OUT/b13_s${s}_t$tv.txt) skip $(grep -c '^skip' $OUT/b13_s${s}_t$tv.txt)"; done
export LINEAR_ARD_TIME_LENGTHS=4096,8192,16384
for v in 12 13:3:3 13:3:1 13:3:2 13:2:3 13:3:0 12 13:3:3; do IFS=: read vv s tv <<<"$v"; echo -n "$v: "; LINEAR_ARD_BWD13_STAGES=${s:-3} LINEAR_ARD_BWD13_TURNS=${tv:-3} timeout 20 "$rk" backward $vv --time-only 2>&1 | grep -E "^time|rror" | awk '{printf "%s %s | ", $5, $(NF-8)}'; echo; done
t0=$SECONDS
LINEAR_ARD_TIME_LENGTHS=8192 timeout 110 ncu --set full --import-source no -k "regex:relation_kl_bwd_v13" --launch-skip 2 -c 1 -o "$OUT/ncu_bwd13" "$rk" backward 13 --time-only > "$OUT/ncu_bwd13_run.log" 2>&1; echo "ncu rc=$? at $((SECONDS-t0)) s"
ncu -i "$OUT/ncu_bwd13.ncu-rep" --print-details all > "$OUT/ncu_bwd13.txt" 2>&1
ncu -i "$OUT/ncu_bwd13.ncu-rep" --page source --csv --print-source sass > "$OUT/sass_bwd13.csv" 2>&1
grep -E "^ +(Duration|Issue Slots Busy|Warp Cycles Per Issued|Registers Per Thread|L2 Cache Throughput)" "$OUT/ncu_bwd13.txt" | head -6
rm -f "$OUT"/ncu_*.ncu-rep
