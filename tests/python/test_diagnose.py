"""`linear-ard diagnose` on CPU with the demo model (native 256 positions): the native RoPE itself
(every scaling at factor 1) scores KL 0 and relation KL 0 and the native model's passkey outputs;
PI x8 is worse than PI x2; the KL and both perplexities of every scaling equal transformers' on the
same blocks with that scaling's rope dict in config.json; the recommendation follows its rule; bad
arguments give one error line and write nothing.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_diagnose.py
"""

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
import transformers
from tokenizers import Tokenizer

from test_restore import binary  # the binary under $LINEAR_ARD_BUILD_DIR

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "models" / "demo"
TEXT = ROOT / "data" / "demo" / "heldout.jsonl"
NATIVE = 256
SCALINGS = ("pi", "yarn", "ntk", "llama3", "longrope")


def diagnose(*args, ok=True):
    r = subprocess.run([str(binary()), "diagnose", *map(str, args)], capture_output=True, text=True, timeout=600)
    if ok:
        assert r.returncode == 0, r.stdout + r.stderr
    return r


def run(out, length, scalings=SCALINGS, *extra, teacher=DEMO):
    r = diagnose(teacher, "--length", length, "--scalings", ",".join(scalings), "--text", TEXT, "--device", "cpu",
                 "--dtype", "fp32", "--quiet", "-o", out, *extra)
    report = json.loads((out / "diagnose.json").read_text())
    assert (out / "diagnose.md").read_text() in r.stdout
    return report, r.stdout


def rows_of(report):
    return {row["name"]: row for row in report["rows"]}


def test_native_rope_itself_has_no_damage(tmp_path):
    """At L = native every scaling is the native RoPE (factor 1): no KL, no relation KL, the native
    perplexity, and for PI (bit-identical frequencies) the native model's passkey outputs."""
    report, stdout = run(tmp_path / "x1", NATIVE, SCALINGS, "--all-layers")
    rows = rows_of(report)
    assert report["factor"] == 1 and list(rows) == ["native", *SCALINGS]
    native = rows["native"]
    assert native["kl"] == 0 and native["passkey"], native
    for name in SCALINGS:
        row = rows[name]
        # pi, ntk, longrope: the same inv_freq bits; yarn and llama3 blend two equal frequency sets,
        # which rounds in the last fp32 bit.
        assert abs(row["kl"]) < 1e-6, (name, row["kl"])
        assert row["ppl"] == pytest.approx(native["ppl"], rel=1e-5), name
        assert row["relation"]["layers"] == [0, 1, 2, 3]
        for key in ("q", "k", "v"):
            assert max(abs(x) for x in row["relation"][key]) < 1e-6, (name, key, row["relation"][key])
    assert rows["pi"]["passkey"] == native["passkey"]
    assert "recommendation:" in stdout


def test_pi_x8_is_worse_than_pi_x2(tmp_path):
    x2, _ = run(tmp_path / "x2", 2 * NATIVE, ["pi"], "--relation-length", 2 * NATIVE)
    x8, _ = run(tmp_path / "x8", 8 * NATIVE, ["pi"], "--relation-length", 2 * NATIVE)
    pi2, pi8 = rows_of(x2)["pi"], rows_of(x8)["pi"]
    assert x2["factor"] == 2 and x8["factor"] == 8
    assert pi8["kl"] > pi2["kl"] > 0.01, (pi2["kl"], pi8["kl"])
    assert pi8["ppl"] > pi2["ppl"] > rows_of(x2)["native"]["ppl"]
    for key in ("q", "k"):  # V carries no position: its relation moves only through earlier layers
        assert pi8["relation"][key][-1] > pi2["relation"][key][-1] > 0, key
        assert pi8["relation_long"][key][-1] > pi2["relation_long"][key][-1] > 0, key
    assert x8["passkey"]["lengths"] == [512, 1024, 2048]
    assert set(rows_of(x8)["native"]["passkey"]) == set()  # every length is past the native 256
    assert set(pi8["passkey"]) == {"512", "1024", "2048"}


def demo_blocks(ctx, count):
    """TextBlocks' packing of the JSONL text: each document with BOS, then EOS, concatenated, cut."""
    tok = Tokenizer.from_file(str(DEMO / "tokenizer.json"))
    eos = tok.token_to_id("</s>")
    stream = []
    for line in TEXT.read_text().splitlines():
        stream += tok.encode(json.loads(line)["text"]).ids + [eos]
        if len(stream) >= ctx * count:
            break
    return torch.tensor([stream[i * ctx:(i + 1) * ctx] for i in range(count)])


def hf_scaled(rope):
    """The demo model with `rope` as its rope_scaling, configured as `restore` writes a student."""
    config = json.loads((DEMO / "config.json").read_text())
    rope = dict(rope)
    rope.setdefault("original_max_position_embeddings", NATIVE)
    config["rope_scaling"] = rope
    if rope["rope_type"] != "dynamic":
        config["max_position_embeddings"] = round(NATIVE * rope["factor"])
    cfg = transformers.LlamaConfig.from_dict(config)
    return transformers.LlamaForCausalLM.from_pretrained(str(DEMO), config=cfg, dtype=torch.float32).eval()


def kl_and_ppl(native, scaled, ids):
    with torch.no_grad():
        p = native(ids).logits[:, :-1].float().log_softmax(-1)
        q = scaled(ids).logits[:, :-1].float().log_softmax(-1)
    target = ids[:, 1:, None]
    kl = (p.exp() * (p - q)).sum(-1).double().mean().item()
    return kl, math.exp(-q.gather(-1, target).double().mean().item()), math.exp(-p.gather(-1, target).double().mean().item())


def test_kl_and_perplexity_match_transformers(tmp_path):
    report, _ = run(tmp_path / "x4", 4 * NATIVE, SCALINGS, "--blocks", 3, "--ctx", 200)
    ids = demo_blocks(200, 3)
    assert report["blocks"] == 3 and report["tokens"] == 3 * 199
    native = transformers.LlamaForCausalLM.from_pretrained(str(DEMO), dtype=torch.float32).eval()
    rows = rows_of(report)
    for name in SCALINGS:
        row = rows[name]
        kl, ppl, native_ppl = kl_and_ppl(native, hf_scaled(row["rope"]), ids)
        # fp32 forwards of the same model by two implementations: ~1e-6 apart per logit.
        assert row["kl"] == pytest.approx(kl, rel=1e-3, abs=1e-6), name
        assert row["ppl"] == pytest.approx(ppl, rel=1e-4), name
        assert rows["native"]["ppl"] == pytest.approx(native_ppl, rel=1e-4)
    # Short of the native length dynamic NTK is the native RoPE, YaRN and LongRoPE are not.
    assert rows["ntk"]["kl"] < 1e-6 and rows["yarn"]["kl"] > 1e-4 and rows["longrope"]["kl"] > 1e-4
    assert rows["pi"]["kl"] > rows["yarn"]["kl"]


def test_recommendation_follows_the_rule(tmp_path):
    report, stdout = run(tmp_path / "rule", 4 * NATIVE, ["pi", "yarn", "llama3"], "--margin", 30)
    rows = [r for r in report["rows"] if r["name"] != "native"]
    at_length = {r["name"]: 100 * r["passkey"][str(4 * NATIVE)] for r in rows}
    best = max(at_length.values())
    eligible = [r for r in rows if at_length[r["name"]] >= best - 30]
    expected = min(eligible, key=lambda r: (r["kl"], -at_length[r["name"]]))["name"]
    assert report["recommended"] == expected
    assert f"recommendation: {expected} (rule: among the scalings whose passkey accuracy at L is within 30 points" in stdout
    assert "fewer than the 20 of the GPU setting" in stdout and report["passkey"]["prompts_per_length"] == 5


def scaled_teacher(tmp_path):
    folder = tmp_path / "scaled_teacher"
    shutil.copytree(DEMO, folder)
    config = json.loads((folder / "config.json").read_text())
    config["rope_scaling"] = {"rope_type": "linear", "factor": 4.0}
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("case", ["short_length", "ctx_past_native", "relation_past_length", "scaled_teacher",
                                  "short_text", "unknown_scaling", "no_text"])
def test_bad_arguments_give_one_error_line(tmp_path, case):
    out = tmp_path / "out"
    short = tmp_path / "short.jsonl"
    short.write_text(json.dumps({"text": "And the LORD spake."}) + "\n")
    teacher, text, extra = DEMO, TEXT, []
    expect = {
        "short_length": (1, ["--length 100 is below the native length 256"]),
        "ctx_past_native": (1, ["--ctx 512 must be in [2, 256]"]),
        "relation_past_length": (1, ["--relation-length 4096 must be in [2, --length 1024]"]),
        "scaled_teacher": (1, ["already RoPE-scaled", "linear"]),
        "short_text": (1, [str(short), "blocks of 256 tokens"]),
        "unknown_scaling": (2, ["warp"]),
        "no_text": (2, ["--text"]),
    }[case]
    length = 100 if case == "short_length" else 1024
    scalings = "pi,warp" if case == "unknown_scaling" else "pi"
    if case == "ctx_past_native":
        extra = ["--ctx", 512]
    elif case == "relation_past_length":
        extra = ["--relation-length", 4096]
    elif case == "scaled_teacher":
        teacher = scaled_teacher(tmp_path)
    elif case == "short_text":
        text = short
    args = [teacher, "--length", length, "--scalings", scalings, "--device", "cpu", "-o", out, *extra]
    if case != "no_text":
        args += ["--text", text]
    r = diagnose(*args, ok=False)
    code, words = expect
    assert r.returncode == code, r.stdout + r.stderr
    if code == 1:
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("linear-ard: error: "), r.stderr
    for w in words:
        assert w in r.stderr, (w, r.stderr)
    assert not out.exists(), "an error wrote an output folder"
    assert "Traceback" not in r.stderr
