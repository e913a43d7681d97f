"""The student's RoPE over a teacher that already has its own scaling (docs/rope.md), against
transformers.

For each teacher scaling type, a small random teacher is built with transformers (test_model_parity's
families) and saved; tests/model/model_dump runs its weights under the student config that
rope_compose (what `linear-ard restore` uses) makes of the teacher's config.json and `student_rope`,
and writes that config.json. The reference is transformers running the same weights under the rope
dict docs/rope.md gives, which `expected_student` below writes out again from the rule, apart from
the C++: the logits and the post-RoPE Q/K/V of both layers must agree (fp32, relative error <= 1e-4;
in practice 0), and transformers must read our config.json with the same cos/sin,
max_position_embeddings and original_max_position_embeddings. Combinations transformers cannot
express are refused naming both types.

    pytest tests/python/test_rope_compose.py
"""

import json
import math
import os
import subprocess
import tempfile

import pytest
import torch
import transformers
from safetensors.torch import load_file

from test_model_parity import (FP32_TOLERANCE, LAYERS, SCALINGS, VOCAB, build_model, hf_qkv, model_dump_path,
                               rel_err, rope_reads_same)

NOT_BUILT = not os.path.exists(model_dump_path())


def rotary_half(config):
    """Half the rotated dimensions of a head (Phi3Config has no head_dim attribute)."""
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return int(head_dim * config.rope_parameters.get("partial_rotary_factor", 1.0)) // 2


def teacher_facts(config, raw):
    """(type, factor a, original length L0, context T) of a teacher as docs/rope.md defines them.
    `config` is transformers' config of the teacher, `raw` its config.json."""
    rope, m = config.rope_parameters, config.max_position_embeddings
    kind = rope["rope_type"]
    raw_rope = raw.get("rope_scaling") or raw.get("rope_parameters") or {}
    explicit = "original_max_position_embeddings" in raw or "original_max_position_embeddings" in raw_rope
    if kind == "default":
        return kind, 1.0, m, m
    a = rope.get("factor") or m / rope["original_max_position_embeddings"]
    if kind == "dynamic":
        return kind, a, m, round(m * a)
    if kind == "linear" and not explicit:
        return kind, a, round(m / a), m
    original = rope["original_max_position_embeddings"]
    return kind, a, original, max(m, round(original * a))


def expected_student(config, raw, request):
    """(rope dict, max_position_embeddings, top-level original or None) of the student, per docs/rope.md."""
    kind, a, original, context = teacher_facts(config, raw)
    have = {k: v for k, v in config.rope_parameters.items() if k != "attention_factor"}
    want, f = request["rope_type"], request["factor"]
    rope = dict(request, rope_theta=have["rope_theta"])
    if "partial_rotary_factor" in have:
        rope["partial_rotary_factor"] = have["partial_rotary_factor"]
    target = round(context * f)
    if want == "linear" and (kind == "longrope" or config.model_type == "phi3"):
        half = rotary_half(config)
        short = have["short_factor"] if kind == "longrope" else [1.0] * half
        long = have["long_factor"] if kind == "longrope" else [1.0] * half
        attention = 1.0 if a == 1 else math.sqrt(1 + math.log(a) / math.log(original))
        rope.update(rope_type="longrope", short_factor=[x * f for x in short], long_factor=[x * f for x in long],
                    attention_factor=attention, factor=a * f, original_max_position_embeddings=original)
    elif want == kind:
        rope = {**have, **rope, "factor": a * f}
        if kind == "longrope" and "long_factor" not in request:
            rope["long_factor"] = [x * f for x in have["long_factor"]]
    elif want == "linear":
        rope.update(factor=a * f, original_max_position_embeddings=original)
    elif want != "dynamic":
        rope.update(factor=target / original, original_max_position_embeddings=original)
    if want in ("yarn", "llama3", "longrope") or rope["rope_type"] == "longrope":
        rope.setdefault("original_max_position_embeddings", original)
    top = rope.get("original_max_position_embeddings") if config.model_type == "phi3" else None
    return rope, (config.max_position_embeddings if want == "dynamic" else target), top


# (family, teacher scaling of test_model_parity.SCALINGS, student_rope, sequence length)
CASES = [
    ("llama3", "none", {"rope_type": "yarn", "factor": 2.0}, 24),
    ("llama3", "linear", {"rope_type": "linear", "factor": 2.0}, 24),
    ("llama3", "linear", {"rope_type": "yarn", "factor": 2.0}, 24),
    ("llama3", "dynamic", {"rope_type": "dynamic", "factor": 2.0}, 40),
    ("qwen2", "yarn_explicit", {"rope_type": "yarn", "factor": 2.0}, 24),
    ("llama3", "yarn_mscale", {"rope_type": "yarn", "factor": 2.0, "beta_fast": 8.0}, 24),
    ("llama3", "llama3", {"rope_type": "llama3", "factor": 2.0}, 24),
    ("llama3", "llama3", {"rope_type": "yarn", "factor": 2.0}, 24),
    ("llama2", "llama3", {"rope_type": "longrope", "factor": 2.0}, 24),
    ("llama2", "longrope_long", {"rope_type": "longrope", "factor": 2.0}, 24),
    ("llama2", "longrope_long", {"rope_type": "linear", "factor": 2.0}, 24),
    ("qwen3", "yarn", {"rope_type": "yarn", "factor": 2.0}, 24),
    ("mistral_head_dim", "llama3", {"rope_type": "llama3", "factor": 3.0}, 24),
    ("phi3", "none", {"rope_type": "linear", "factor": 2.0}, 24),
    ("phi3", "longrope_long", {"rope_type": "longrope", "factor": 2.0}, 24),
    ("phi3", "longrope_long", {"rope_type": "linear", "factor": 2.0}, 24),
]


def with_factors(request, config):
    """A longrope request over a teacher of another type needs its own factor lists."""
    if request["rope_type"] != "longrope" or config.rope_parameters["rope_type"] == "longrope":
        return request
    half = rotary_half(config)
    return dict(request, short_factor=[1.0 + 0.1 * i for i in range(half)],
                long_factor=[2.0 + 0.5 * i for i in range(half)])


def hf_student(teacher, rope, max_positions, top_original):
    """The teacher's weights under the expected student config, in transformers."""
    config = type(teacher.config).from_dict(teacher.config.to_dict())
    config.rope_parameters = rope
    config.max_position_embeddings = max_positions
    if top_original is not None:
        config.original_max_position_embeddings = top_original
    student = transformers.AutoModelForCausalLM.from_config(config).eval()
    student.load_state_dict(teacher.state_dict())
    return student


@pytest.mark.skipif(NOT_BUILT, reason="model_dump not built")
@pytest.mark.parametrize("family,scaling,request_,n", CASES,
                         ids=[f"{f}-{s}-{r['rope_type']}" for f, s, r, _ in CASES])
def test_student_over_scaled_teacher(family, scaling, request_, n, tmp_path):
    teacher = build_model(family, scaling, seed=7 + list(SCALINGS).index(scaling))
    folder, written = tmp_path / "teacher", tmp_path / "written"
    teacher.save_pretrained(folder)
    written.mkdir()
    raw = json.loads((folder / "config.json").read_text())
    request = with_factors(request_, teacher.config)
    ids = torch.randint(0, VOCAB, (2, n), generator=torch.Generator().manual_seed(n))
    dump = tmp_path / "dump.safetensors"
    subprocess.run([model_dump_path(), str(folder), str(dump), "--ids", ",".join(" ".join(map(str, r)) for r in ids.tolist()),
                    "--qkv-layers", f"0,{LAYERS - 1}", "--student-rope", json.dumps(request),
                    "--write-config", str(written)], check=True)
    ours = load_file(dump)

    rope, max_positions, top = expected_student(teacher.config, raw, request)
    student = hf_student(teacher, rope, max_positions, top)
    expected = tmp_path / "expected"
    student.config.save_pretrained(expected)
    assert rope_reads_same(expected, written, n)
    with torch.no_grad():
        out = student(ids, output_hidden_states=True)
        assert rel_err(ours["logits"], out.logits) <= FP32_TOLERANCE
        positions = torch.arange(n)[None]
        for layer in (0, LAYERS - 1):
            ref = hf_qkv(student, out.hidden_states[layer], layer, positions)
            for j, t in enumerate("qkv"):
                assert rel_err(ours[f"{t}.{layer}"], ref[j]) <= FP32_TOLERANCE, (t, layer)
        # The composition changes the model: the teacher's own logits are not the student's.
        assert rel_err(teacher(ids).logits, out.logits) > 1e-3


REFUSED = [
    ("llama3", "yarn", {"rope_type": "linear", "factor": 2.0},
     "rope_type linear over a teacher whose config.json has rope_type yarn", "(with this teacher: yarn, llama3, longrope)"),
    ("llama3", "llama3", {"rope_type": "dynamic", "factor": 2.0},
     "dynamic NTK recomputes the frequencies from rope_theta alone", "(with this teacher: yarn, llama3, longrope)"),
    ("phi3", "longrope_long", {"rope_type": "yarn", "factor": 2.0},
     "Phi3ForCausalLM takes rope dicts of type default, longrope only", "(with this teacher: linear, longrope)"),
    ("llama3", "yarn", {"rope_type": "llama3", "factor": 2.0},
     "rope_type llama3 needs low_freq_factor (the teacher's rope_type is yarn", ""),
]


@pytest.mark.skipif(NOT_BUILT, reason="model_dump not built")
@pytest.mark.parametrize("family,scaling,request_,message,alternatives", REFUSED,
                         ids=[f"{f}-{s}-{r['rope_type']}" for f, s, r, _, _ in REFUSED])
def test_inexpressible_combination_is_refused(family, scaling, request_, message, alternatives, tmp_path):
    with tempfile.TemporaryDirectory(dir=tmp_path) as tmp:
        build_model(family, scaling, seed=1).save_pretrained(tmp)
        run = subprocess.run([model_dump_path(), tmp, os.path.join(tmp, "dump.safetensors"), "--ids", "1 2",
                              "--student-rope", json.dumps(request_)], capture_output=True, text=True)
    assert run.returncode == 1
    assert message in run.stderr and alternatives in run.stderr, run.stderr
