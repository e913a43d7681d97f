"""The lm-evaluation-harness model `linear-ard`: lm-eval builds the requests of any task it knows
(its registry, or a task YAML under --include_path) and computes the metrics; this project's model
engine answers the requests, through `linear-ard eval requests` (one run per request type, the
model loaded once per run), as lm-eval's HF backend would (same encoding, windows, greedy decoding).

    import linear_ard.lm_eval_model  # registers the model
    lm_eval.simple_evaluate(model="linear-ard", model_args="pretrained=DIR,dtype=float32", tasks=[...])

or from the shell, lm-eval's own command line with this model registered:

    python -m linear_ard.lm_eval_cli --model linear-ard --model_args pretrained=DIR --tasks hellaswag

model_args: pretrained (a folder or a hub name in the local HF cache), dtype (float32, bfloat16,
auto), max_length, max_gen_toks, add_bos_token (False: no special tokens); --device and
--batch_size are lm-eval's own flags.
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from ._binary import binary

_DTYPES = {"float32": "fp32", "fp32": "fp32", "bfloat16": "bf16", "bf16": "bf16", "auto": "auto"}


def _flag(value):
    return value if isinstance(value, bool) else str(value).lower() in ("1", "true", "yes")


@register_model("linear-ard")
class LinearArdLM(LM):
    def __init__(self, pretrained, device=None, dtype="auto", batch_size=1, max_length=0, max_gen_toks=256,
                 add_bos_token=True, **unused):
        super().__init__()
        if str(dtype) not in _DTYPES:
            raise ValueError(f"linear-ard: dtype '{dtype}' (model_args) must be one of {', '.join(_DTYPES)}")
        self.pretrained = str(pretrained)
        self.run_device = {"cpu": "cpu", None: "auto"}.get(device, "cuda" if str(device).startswith("cuda") else "auto")
        self.dtype = _DTYPES[str(dtype)]
        self.batch_size = int(batch_size) if str(batch_size).isdigit() else 1
        self.max_length, self.max_gen_toks = int(max_length or 0), int(max_gen_toks)
        self.add_bos_token = _flag(add_bos_token)

    def _answer(self, requests):
        """Runs `linear-ard eval requests` on `requests` (dicts); returns its answers in order."""
        if not requests:
            return []
        with tempfile.TemporaryDirectory(prefix="linear-ard-requests-") as tmp:
            src, dst = Path(tmp) / "requests.jsonl", Path(tmp) / "answers.jsonl"
            src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in requests), encoding="utf-8")
            command = [binary(), "eval", "requests", self.pretrained, "--in", str(src), "--out", str(dst),
                       "--device", self.run_device, "--dtype", self.dtype, "--batch_size", str(self.batch_size),
                       "--max_length", str(self.max_length), "--max_gen_toks", str(self.max_gen_toks)]
            if not self.add_bos_token:
                command.append("--no-bos")
            r = subprocess.run(command, stdout=sys.stderr)
            if r.returncode != 0:
                raise RuntimeError(f"linear-ard eval requests failed (exit {r.returncode}; its error is above)")
            return [json.loads(line) for line in dst.read_text(encoding="utf-8").splitlines()]

    def loglikelihood(self, requests, disable_tqdm=False):
        answers = self._answer([{"type": "loglikelihood", "context": c, "continuation": x} for c, x in
                                (req.args for req in requests)])
        return [(a["logprob"], a["greedy"]) for a in answers]

    def loglikelihood_rolling(self, requests, disable_tqdm=False):
        answers = self._answer([{"type": "loglikelihood_rolling", "text": req.args[0]} for req in requests])
        return [a["logprob"] for a in answers]

    def generate_until(self, requests, disable_tqdm=False):
        from lm_eval.models.utils import normalize_gen_kwargs
        out = []
        for req in requests:
            context, gen_kwargs = req.args
            kwargs = normalize_gen_kwargs(gen_kwargs, self.max_gen_toks)
            if kwargs.get("do_sample") or kwargs.get("temperature", 0.0) > 0:
                raise ValueError("linear-ard: generate_until decodes greedily; this task asks for sampling "
                                 f"({gen_kwargs})")
            out.append({"type": "generate_until", "context": context, "until": kwargs.get("until") or [],
                        "max_gen_toks": kwargs["max_gen_toks"]})
        return [a["text"] for a in self._answer(out)]
