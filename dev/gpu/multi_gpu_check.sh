#!/usr/bin/env bash
# Multi-GPU checks for the GPU machine (nvidia-h200-x2 / -x4; docs/multi-gpu.md): builds linear-ard,
# then
#   1. equivalence: the same global batch and seed on N = 1, 2 (and 4) GPUs through torchrun, a tiny
#      model in fp32: per-step loss and gradient norm within tolerance of the N = 1 run;
#   2. scaling: tokens/s of final-layer ARD at 4K on a LLaMA-2-7B-shaped model with random bf16
#      weights (written once to $WORK), batch 1 per GPU, for each N, and the weak-scaling efficiency
#      tokens/s(N) / (N * tokens/s(1));
#   3. dead rank: two ranks started by hand, rank 1 killed mid-run; rank 0 must exit non-zero with an
#      error within the process-group timeout.
# Logs, metrics and results.md go to $OUT (or ./multi_gpu_out).
#   dev/gpu/multi_gpu_check.sh            everything, N up to the number of GPUs (at most 4)
#   SKIP_SCALING=1 dev/gpu/multi_gpu_check.sh   checks 1 and 3 only
#   ONLY=scaling dev/gpu/multi_gpu_check.sh      some of equivalence,scaling,dead (comma-separated)
#   PREBUILT=.devbin dev/gpu/multi_gpu_check.sh  binaries packed by dev/gpu/prebuilt_pack.sh (carried)
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
out="${OUT:-$root/build/multi_gpu_out}"
work="${WORK:-$root/build/multi_gpu}"  # git-ignored; WORK=DIR elsewhere (the 7B folder takes ~14 GB)
mkdir -p "$out" "$work"
build="${BUILD_DIR:-$root/build-gpu}"
export PYTHONUNBUFFERED=1
status=0
summary=()
only="${ONLY:-equivalence,scaling,dead}"
[[ -n "${SKIP_SCALING:-}" ]] && only="${only//scaling/}"
wanted() { [[ ",$only," == *",$1,"* ]]; }
step() { summary+=("$(printf '%-44s %s' "$1" "$([[ $2 -eq 0 ]] && echo ok || echo FAILED)")"); [[ $2 -eq 0 ]] || status=1; }

gpus="$(nvidia-smi --list-gpus | wc -l)"
nvidia-smi --query-gpu=name,memory.total --format=csv | tee "$out/gpu.txt"
sizes="1"
[[ $gpus -ge 2 ]] && sizes="1 2"
[[ $gpus -ge 4 ]] && sizes="1 2 4"
max_n="${sizes##* }"
echo "GPUs: $gpus; N in: $sizes"

source dev/gpu/gpu_binaries.sh  # defines: gpu_binaries (PREBUILT=DIR: carried binaries, no build)
LOG_DIR="$out" gpu_binaries linear_ard_cli || exit 1
if [[ -z "${PREBUILT:-}" ]]; then
  grep -q "NCCL backend" "$out/configure.log" || { echo "configure did not find nccl.h: no NCCL backend"; grep -i nccl "$out/configure.log"; exit 1; }
fi
bin="$build/src/cli/linear-ard"
echo "build done"

# A tiny teacher and its token stream (tests/python/tiny_teacher.py), for checks 1 and 3.
python3 - "$work/tiny" <<'EOF' || { echo "tiny teacher failed"; exit 1; }
import random, sys
from pathlib import Path
import numpy as np
sys.path.insert(0, "tests/python")
import tiny_teacher, transformers
root = Path(sys.argv[1]); root.mkdir(parents=True, exist_ok=True)
rng = random.Random(3)
words = "the model restores relation attention query key value rope scaled student teacher".split()
texts = [" ".join(rng.choice(words) for _ in range(rng.randint(20, 40))) + "." for _ in range(400)]
t = tiny_teacher.teacher_make(root / "teacher", texts, hidden=64, intermediate=128, layers=2, heads=4,
                              kv_heads=2, max_positions=128, vocab_size=300, qk_std=0.15, seed=0)
tok = transformers.AutoTokenizer.from_pretrained(str(t))
ids = [i for x in texts for i in tok(x)["input_ids"] + [tok.eos_token_id]]
np.save(root / "ids.npy", np.array(ids, dtype=np.uint16))
EOF
tiny_cfg="$work/tiny/config.yaml"
cat >"$tiny_cfg" <<EOF
teacher: $work/tiny/teacher
student_rope: {rope_type: linear, factor: 4}
data: [$work/tiny/ids.npy]
ctx_len: 128
steps: 20
lr: 1.0e-3
device: cuda
dtype: fp32
trainable: lora_all
log_every: 5
EOF

# 1. Equivalence: global batch 4 on every N (batch_size 4/N per GPU).
port=29611
if wanted equivalence; then
for n in $sizes; do
  torchrun --no-python --nproc-per-node "$n" --master-port "$port" "$bin" restore "$tiny_cfg" \
    "output=$work/eq_$n" overwrite=true batch_size=$((4 / n)) >"$out/equivalence_$n.log" 2>&1
  step "equivalence run N=$n" $?
  cp "$work/eq_$n/metrics.jsonl" "$out/equivalence_$n.metrics.jsonl" 2>/dev/null
  port=$((port + 1))
done
# fp32 on CUDA: the relation-KL kernel's own fp32 rounding plus the reordered sums (batch of 4 in one
# forward vs 2 or 1 per GPU; NCCL's sum) differ from N = 1 by rounding; 1e-4 relative is ~100x the
# per-step differences expected and far below what a wrong shard or a missing average gives (x2).
python3 - "$work" $sizes <<'EOF' | tee "$out/equivalence.md"
import json, sys
work, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
def steps(n):
    return [json.loads(l) for l in open(f"{work}/eq_{n}/metrics.jsonl") if not json.loads(l).get("eval")]
ref = steps(1)
print("| N | steps | max rel. diff loss | max rel. diff grad_norm | tokens at end (G·L·B·A·U) |")
print("|---|---|---|---|---|")
bad = False
for n in sizes:
    s = steps(n)
    dl = max(abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(ref, s))
    dg = max(abs(a["grad_norm"] - b["grad_norm"]) / abs(a["grad_norm"]) for a, b in zip(ref, s))
    bad |= len(s) != len(ref) or dl > 1e-4 or dg > 1e-4 or s[-1]["tokens"] != ref[-1]["tokens"]
    print(f"| {n} | {len(s)} | {dl:.2e} | {dg:.2e} | {s[-1]['tokens']} |")
sys.exit(1 if bad else 0)
EOF
step "equivalence: loss curves within 1e-4" "${PIPESTATUS[0]}"
fi

# 2. Scaling: LLaMA-2-7B shape, random bf16 weights, final-layer ARD (QKV of all 32 layers trainable),
#    ctx 4096, batch 1 per GPU, PI x2.
if wanted scaling; then
  big="$work/llama2_7b_random"
  if [[ ! -f "$big/done" ]]; then
    python3 - "$big" "$work/tiny/teacher" <<'EOF' || { echo "7B-shaped folder failed"; exit 1; }
import json, shutil, sys
from pathlib import Path
import numpy as np, torch
from safetensors.torch import save_file
out, tok_from = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
H, I, L, V, heads = 4096, 11008, 32, 32000, 32
cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H, "intermediate_size": I,
       "num_hidden_layers": L, "num_attention_heads": heads, "num_key_value_heads": heads, "vocab_size": V,
       "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
       "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 1, "eos_token_id": 2}
(out / "config.json").write_text(json.dumps(cfg))
for f in tok_from.iterdir():  # any tokenizer with <= 32000 ids: the data below is token ids
    if f.name.startswith(("tokenizer", "special_tokens")): shutil.copy(f, out / f.name)
g = torch.Generator(device="cuda").manual_seed(0)
def w(*shape, std=0.02):
    return (torch.randn(*shape, generator=g, device="cuda") * std).to(torch.bfloat16).cpu()
index, shard = {}, 0
def flush(t):
    global shard
    name = f"model-{shard:05d}.safetensors"; save_file(t, str(out / name), metadata={"format": "pt"})
    index.update({k: name for k in t}); shard += 1
flush({"model.embed_tokens.weight": w(V, H), "model.norm.weight": torch.ones(H, dtype=torch.bfloat16), "lm_head.weight": w(V, H)})
for l in range(L):
    p = f"model.layers.{l}."
    flush({p + "self_attn.q_proj.weight": w(H, H), p + "self_attn.k_proj.weight": w(H, H),
           p + "self_attn.v_proj.weight": w(H, H), p + "self_attn.o_proj.weight": w(H, H),
           p + "mlp.gate_proj.weight": w(I, H), p + "mlp.up_proj.weight": w(I, H), p + "mlp.down_proj.weight": w(H, I),
           p + "input_layernorm.weight": torch.ones(H, dtype=torch.bfloat16),
           p + "post_attention_layernorm.weight": torch.ones(H, dtype=torch.bfloat16)})
(out / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": index}))
np.save(out / "ids.npy", np.random.default_rng(0).integers(3, 300, size=4096 * 80, dtype=np.uint32))
(out / "done").write_text("ok")
EOF
  fi
  cat >"$work/big.yaml" <<EOF
teacher: $big
student_rope: {rope_type: linear, factor: 2}
data: [$big/ids.npy]
ctx_len: 4096
batch_size: 1
steps: 12
lr: 2.0e-5
device: cuda
dtype: bf16
checkpoint_layers: true
log_every: 1
EOF
  for n in $sizes; do
    torchrun --no-python --nproc-per-node "$n" --master-port "$port" "$bin" restore "$work/big.yaml" \
      "output=$work/scale_$n" overwrite=true >"$out/scaling_$n.log" 2>&1
    step "scaling run N=$n" $?
    cp "$work/scale_$n/metrics.jsonl" "$out/scaling_$n.metrics.jsonl" 2>/dev/null
    port=$((port + 1))
  done
  python3 - "$work" $sizes <<'EOF' | tee "$out/scaling.md"
import json, statistics, sys
work, sizes = sys.argv[1], [int(s) for s in sys.argv[2:]]
rows, base = [], None
print("| N | tokens/step (G·L·B·A) | median step s (steps 3..12) | tokens/s | per GPU | weak-scaling eff. | peak GiB (rank 0) |")
print("|---|---|---|---|---|---|---|")
for n in sizes:
    try:
        s = [json.loads(l) for l in open(f"{work}/scale_{n}/metrics.jsonl") if not json.loads(l).get("eval")]
    except OSError:
        print(f"| {n} | run failed | | | | | |"); continue
    t = statistics.median(r["step_time_s"] for r in s[2:])
    tok = s[0]["tokens"]
    tps = tok / t
    base = base or (tps if n == 1 else None)
    eff = f"{tps / (n * base):.3f}" if base else "n/a"
    print(f"| {n} | {tok} | {t:.3f} | {tps:,.0f} | {tps / n:,.0f} | {eff} | {max(r['peak_memory_bytes'] for r in s) / 2**30:.1f} |")
EOF
fi

# 3. Dead rank: 2 ranks by hand (torchrun would kill the survivor itself), rank 1 killed after a few
#    steps; rank 0 must fail with an error within the timeout (60 s here) plus start-up slack.
timeout_s=30
if [[ $gpus -ge 2 ]] && wanted dead; then
  dead="$work/dead"; rm -rf "$dead"
  common=(MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 LINEAR_ARD_DIST_TIMEOUT=$timeout_s)
  env "${common[@]}" RANK=0 LOCAL_RANK=0 "$bin" restore "$tiny_cfg" "output=$dead" steps=100000 \
    log_every=1 >"$out/dead_rank0.log" 2>&1 &
  pid0=$!
  env "${common[@]}" RANK=1 LOCAL_RANK=1 "$bin" restore "$tiny_cfg" "output=$dead" steps=100000 \
    >"$out/dead_rank1.log" 2>&1 &
  pid1=$!
  for _ in $(seq 120); do grep -q "^step 20/" "$out/dead_rank0.log" 2>/dev/null && break; sleep 1; done
  kill -9 "$pid1"
  killed_at=$(date +%s)
  rc=0
  for _ in $(seq $((timeout_s + 60))); do kill -0 "$pid0" 2>/dev/null || break; sleep 1; done
  if kill -0 "$pid0" 2>/dev/null; then echo "rank 0 still running $((timeout_s + 60)) s after rank 1 died"; kill -9 "$pid0"; rc=1; fi
  wait "$pid0"; rc0=$?
  took=$(( $(date +%s) - killed_at ))
  echo "rank 0 exited with $rc0, $took s after rank 1 was killed (timeout $timeout_s s); its last lines:"
  tail -4 "$out/dead_rank0.log"
  [[ $rc -eq 0 && $rc0 -ne 0 ]]
  step "dead rank: survivor stops with an error (${took}s)" $?
fi

printf '\n%s\n' "Multi-GPU checks ($(sed -n 2p "$out/gpu.txt" | cut -d, -f1), N = $sizes)"
printf '%s\n' "${summary[@]}"
exit $status
