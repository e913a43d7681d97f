"""The Python API over the `linear-ard` command: restore, tune, diagnose, evaluate.

Each call runs the installed binary (the same engine, configs and outputs as the command line;
progress goes to stderr as on the command line) and returns what the run wrote, read back from its
JSON/YAML files as Python objects. Running the binary rather than binding the C++ API keeps one
implementation of every option and error, and one process per run frees every byte of the model
when it ends; the cost is a process start and a model load per call, seconds against runs of
minutes. A failed run raises RunError carrying the command's one-line error.
"""

import json
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ._binary import binary


class RunError(RuntimeError):
    """A `linear-ard` run that failed: its exit status and its error line."""

    def __init__(self, command, returncode, message):
        super().__init__(message or f"linear-ard exited with status {returncode}")
        self.command, self.returncode = command, returncode


def _run(args, stdout=None):
    """Runs `linear-ard args...`: stderr (progress, warnings) passes through to ours; returns stdout."""
    command = [binary(), *map(str, args)]
    r = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(r.stderr)
    if r.returncode != 0:
        lines = [line for line in r.stderr.splitlines() if line.strip()]
        raise RunError(command, r.returncode, lines[-1] if lines else "")
    return r.stdout


def _override_args(overrides, prefix=""):
    """key=value overrides; nested dicts become dotted keys (stage2={"steps": 0} -> stage2.steps=0)."""
    out = []
    for key, value in overrides.items():
        if isinstance(value, dict):
            out += _override_args(value, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key}={value if isinstance(value, str) else json.dumps(value)}")
    return out


def _jsonl(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _run_config(command, config, overrides, args=()):
    """`linear-ard COMMAND CONFIG key=value... ARGS...` for a config-driven command (restore, tune):
    `config` a YAML file or a dict of its keys (written to a temporary file for the run). Returns
    the run's output folder (the `output` override, else the config's)."""
    import yaml
    with tempfile.TemporaryDirectory(prefix="linear-ard-config-") as tmp:
        if isinstance(config, dict):
            path = Path(tmp) / "config.yaml"
            path.write_text(yaml.safe_dump(config))
            config = path
        _run([command, config, *_override_args(overrides), *args])
        if "output" in overrides:
            return Path(overrides["output"])
        return Path(yaml.safe_load(Path(config).read_text())["output"])


@dataclass
class RestoreResult:
    output: Path             # the run's folder
    model: Path              # the restored HF folder (OUT/model)
    config: dict             # resolved_config.yaml
    metrics: list            # metrics.jsonl: one dict per step and per held-out evaluation
    summary: dict = field(default_factory=dict)  # training_summary.json


def restore(config, **overrides):
    """`linear-ard restore CONFIG key=value...`. `config`: a YAML file, or a dict of config keys
    (written to a temporary YAML file). Keyword arguments are overrides (docs/restore.md's keys;
    a dict value sets sub-keys). Returns a RestoreResult."""
    import yaml
    out = _run_config("restore", config, overrides)
    summary = out / "training_summary.json"
    return RestoreResult(output=out, model=out / "model", config=yaml.safe_load((out / "resolved_config.yaml").read_text()),
                         metrics=_jsonl(out / "metrics.jsonl"),
                         summary=json.loads(summary.read_text()) if summary.exists() else {})


def tune(config, grid, *, trial_fraction=0.25, final=True, budget=None, **overrides):
    """`linear-ard tune CONFIG key=value... --grid KEY=V1,V2 ... [--budget TOKENS]`: short trials of
    each combination of `grid` ({key: [values]}, docs/tune.md), the winner by the runs' validation,
    then its full run (unless `final` is false); `budget` (tokens, an int or a text such as "4.26M")
    scales the full run's steps to it. `config` and `overrides` as for restore. Returns
    OUTPUT/tune.json as a dict: the trials (settings, tokens, the validation each keeps), the winner's
    index and why, and the final run (its folder under "final"; the restored model is its model/)."""
    args = []
    for key, values in grid.items():
        args += ["--grid", f"{key}=" + ",".join(v if isinstance(v, str) else json.dumps(v) for v in values)]
    args += ["--trial-fraction", trial_fraction] + ([] if final else ["--no-final"])
    args += [] if budget is None else ["--budget", budget]
    out = _run_config("tune", config, overrides, args)
    return json.loads((out / "tune.json").read_text())


def diagnose(teacher, *, length, text, output, scalings=None):
    """`linear-ard diagnose TEACHER --length L [--scalings ...] --text FILE -o OUTPUT`: the damage of
    each candidate RoPE scaling before training. Returns OUTPUT/diagnose.json as a dict."""
    args = ["diagnose", teacher, "--length", length, "--text", text, "-o", output]
    if scalings:
        args += ["--scalings", *scalings]
    _run(args)
    return json.loads((Path(output) / "diagnose.json").read_text())


def evaluate(model, kind="tasks", *args, device="auto", dtype="auto", **options):
    """`linear-ard eval KIND MODEL ...` (ppl, tasks, passkey, ruler), e.g.
    evaluate(DIR, "ppl", text=FILE, ctx=[256, 512]) or evaluate(DIR, "tasks", tasks="a.jsonl,b.jsonl").
    Keyword options become --options (underscores kept, lists spread, True a flag). Returns the
    report as a dict (the command's -o OUTPUT.json), for task names lm-eval's results dict."""
    with tempfile.TemporaryDirectory(prefix="linear-ard-eval-") as tmp:
        argv = ["eval", kind, model, *args, "--device", device, "--dtype", dtype, "--quiet"]
        for key, value in options.items():
            flag = f"--{key}"
            if value is True:
                argv.append(flag)
            elif isinstance(value, (list, tuple)):
                argv += [flag, *value]
            elif value is not False and value is not None:
                argv += [flag, value]
        names = kind == "tasks" and not all(Path(t).suffix in (".json", ".jsonl") or "/" in t
                                            for t in str(options.get("tasks", "")).split(","))
        if names:
            argv += ["--output_path", Path(tmp) / "lm_eval"]
            _run(argv)
            (results,) = (Path(tmp) / "lm_eval").rglob("results_*.json")
            return json.loads(results.read_text())
        _run(argv + ["-o", Path(tmp) / "report"])
        return json.loads((Path(tmp) / "report.json").read_text())
