"""LoRA in `linear-ard restore` against PEFT itself: lora.dropout and the adapters/ folder.

- Dropout: the step-1 gradient norm of a LoRA run equals the one PEFT gives (its LoRA layers in
  training mode, lora_dropout on the branch input) when both draw from torch's CPU generator seeded
  alike, with our A initialisation copied in; without dropout the norm is different, so the check
  sees the masks. Activation checkpointing recomputes layers under the forward's generator state
  (same losses and norms with and without it), and N steps + resume equals a straight run bit for
  bit with dropout on.
- adapters/: `AutoPeftModelForCausalLM.from_pretrained(OUT/adapters)` (the base it builds is
  scaled/, the teacher's weights under the restored config) gives the merged model/ folder's
  logits; what peft loads is exactly what we wrote, and peft's own save_pretrained of it writes
  the same keys, tensors and config fields.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_restore_lora.py
"""

import json
import math
import sys
from pathlib import Path

import peft
import pytest
import torch
import transformers
from safetensors.torch import load_file
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from relation_kl_dense import relation_kl_dense  # noqa: E402
from test_restore import restore  # noqa: E402
from test_restore_options import qkv, run, setup  # noqa: E402,F401  (the tiny teacher and its runs)

RANK, ALPHA, DROPOUT = 4, 8, 0.3
LORA = ("trainable=lora_qkv", f"lora.rank={RANK}", f"lora.alpha={ALPHA}")


def peft_grad_norm(setup, dropout):
    """Step 1's gradient norm, recomputed with PEFT: the relation loss of the last layer's post-RoPE
    Q/K/V (dense fp64 KL) of the PEFT-wrapped student in training mode vs the teacher."""
    root, _, _, models, batch = setup
    student = transformers.AutoModelForCausalLM.from_pretrained(str(root / "student_hf"))
    model = peft.get_peft_model(student, peft.LoraConfig(r=RANK, lora_alpha=ALPHA, lora_dropout=dropout,
                                                         target_modules=["q_proj", "k_proj", "v_proj"]))
    layers = model.base_model.model.model.layers
    # The trainer's order of draws from torch's generator after seeding (seed 0): A of each adapter,
    # layer by layer, q, k, v (kaiming-uniform(a=sqrt(5)) bound 1/sqrt(in)); B = 0. Then the step's
    # dropout masks, in the order the modules run.
    torch.manual_seed(0)
    with torch.no_grad():
        for layer in layers:
            for name in ("q_proj", "k_proj", "v_proj"):
                module = getattr(layer.self_attn, name)
                a, b = module.lora_A["default"].weight, module.lora_B["default"].weight
                bound = 1.0 / math.sqrt(a.shape[1])
                a.copy_(torch.rand(a.shape).mul_(2 * bound).sub_(bound))
                b.zero_()
    model.train()
    last = layers[-1].self_attn
    captured = {}
    hooks = [getattr(last, name).register_forward_hook(lambda m, i, o, name=name: captured.__setitem__(name, o))
             for name in ("q_proj", "k_proj", "v_proj")]
    model(batch)
    for h in hooks:
        h.remove()
    b, n = batch.shape
    d = last.head_dim
    q, k, v = (captured[name].view(b, n, -1, d).transpose(1, 2) for name in ("q_proj", "k_proj", "v_proj"))
    cos, sin = model.base_model.model.model.rotary_emb(v, torch.arange(n).unsqueeze(0))
    q, k = apply_rotary_pos_emb(q, k, cos, sin)
    t = qkv(models["teacher"], batch, len(layers) - 1)
    loss = sum(relation_kl_dense(s, s, x, x, causal=True)[0].mean() for s, x in zip((q, k, v), t))
    loss.backward()
    grads = [p.grad for n_, p in model.named_parameters() if "lora_" in n_ and p.grad is not None]
    return torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).item()


def test_dropout_matches_peft(setup):
    _, (with_dropout, *_) = run(setup, "dropout", *LORA, f"lora.dropout={DROPOUT}", "steps=1")
    _, (without, *_) = run(setup, "no_dropout", *LORA, "steps=1")
    reference = peft_grad_norm(setup, DROPOUT)
    assert with_dropout["grad_norm"] == pytest.approx(reference, rel=1e-4)
    assert without["grad_norm"] == pytest.approx(peft_grad_norm(setup, 0.0), rel=1e-4)
    # The masks matter: otherwise the two norms would agree and the check above would prove nothing.
    assert abs(with_dropout["grad_norm"] - without["grad_norm"]) > 0.01 * without["grad_norm"]


def test_dropout_with_checkpoint_layers_recomputes_same_masks(setup):
    keys = ("loss", "grad_norm")
    common = (*LORA, f"lora.dropout={DROPOUT}", "steps=3")
    _, plain = run(setup, "dropout_plain", *common)
    _, checkpointed = run(setup, "dropout_ckpt", *common, "checkpoint_layers=true")
    for a, b in zip(plain, checkpointed):
        for k in keys:
            assert b[k] == pytest.approx(a[k], rel=1e-6), (k, a["step"])


def test_dropout_resume_is_bit_for_bit(setup):
    common = ("trainable=lora_all", f"lora.dropout={DROPOUT}", "steps=4", "checkpoint_every=2")
    straight, s_steps = run(setup, "dropout_straight", *common)
    resumed, _ = run(setup, "dropout_resumed", *common, "stop_after_step=3")
    _, _, config, _, _ = setup
    r = restore(config, f"output={resumed}", *common, "resume=true")
    assert r.returncode == 0, r.stdout + r.stderr
    r_steps = [json.loads(line) for line in (resumed / "metrics.jsonl").read_text().splitlines()]
    r_steps = [x for x in r_steps if not x.get("eval")]
    keys = ("step", "loss", "grad_norm", "lr", "tokens")
    assert [[x[k] for k in keys] for x in r_steps] == [[x[k] for k in keys] for x in s_steps]
    a, b = (load_file(str(p / "model" / "model.safetensors")) for p in (straight, resumed))
    assert all(torch.equal(a[n], b[n]) for n in a)


@pytest.mark.parametrize("trainable,layers", [("lora_all", "last:1"), ("lora_qkv", "[0]")])
def test_adapters_load_in_peft(setup, tmp_path, trainable, layers):
    out, _ = run(setup, f"peft_{trainable}", f"trainable={trainable}", f"layers={layers}", f"lora.rank={RANK}",
                 f"lora.alpha={ALPHA}", "lora.dropout=0.1", "save_adapters=true", "lr=1e-2", "steps=4",
                 # The last step's adapters, not the validation's pick (step 0's would be all zero).
                 "select.criterion=last")
    teacher, batch = setup[1], setup[4]
    adapters = out / "adapters"
    written = load_file(str(adapters / "adapter_model.safetensors"))
    # The standard path: PEFT builds the base from base_model_name_or_path, which names scaled/:
    # the teacher's weights under the restored (scaled-RoPE) config.
    assert json.loads((adapters / "adapter_config.json").read_text())["base_model_name_or_path"] == str(
        (out / "scaled").resolve())
    model = peft.AutoPeftModelForCausalLM.from_pretrained(str(adapters)).eval()
    base = model.get_base_model()
    restored_config = transformers.AutoConfig.from_pretrained(str(out / "model"))
    assert base.config.rope_parameters == restored_config.rope_parameters
    assert base.config.max_position_embeddings == restored_config.max_position_embeddings
    native = transformers.AutoModelForCausalLM.from_pretrained(str(teacher)).state_dict()
    scaled = transformers.AutoModelForCausalLM.from_pretrained(str(out / "scaled")).eval()
    assert all(torch.equal(t, native[n]) for n, t in scaled.state_dict().items())
    merged = transformers.AutoModelForCausalLM.from_pretrained(str(out / "model")).eval()
    with torch.no_grad():
        base_logits, peft_logits, merged_logits = scaled(batch).logits, model(batch).logits, merged(batch).logits

    # What peft holds is what we wrote, module for module (no adapter left at its initial value).
    state = peft.get_peft_model_state_dict(model)
    assert sorted(state) == sorted(written)
    for name, t in written.items():
        assert torch.equal(state[name], t), name
    assert json.loads((adapters / "adapter_config.json").read_text())["lora_dropout"] == 0.1
    # The adapters were trained: they move the logits far more than the tolerance below.
    assert (merged_logits - base_logits).abs().max() > 1e-3
    torch.testing.assert_close(peft_logits, merged_logits, rtol=1e-5, atol=1e-5)

    # peft's own save of the loaded adapters: same keys and tensors, same LoRA settings.
    model.save_pretrained(str(tmp_path / "resaved"))
    resaved = load_file(str(tmp_path / "resaved" / "adapter_model.safetensors"))
    assert sorted(resaved) == sorted(written)
    assert all(torch.equal(resaved[n], written[n]) for n in written)
    ours = json.loads((adapters / "adapter_config.json").read_text())
    theirs = json.loads((tmp_path / "resaved" / "adapter_config.json").read_text())
    for key in ("peft_type", "task_type", "r", "lora_alpha", "lora_dropout", "bias", "fan_in_fan_out",
                "use_rslora", "use_dora", "layers_to_transform", "layers_pattern"):
        assert ours[key] == theirs[key], key
    assert sorted(ours["target_modules"]) == sorted(theirs["target_modules"])
