"""scripts/plot.py: the figures drawn from the files linear-ard writes (metrics.jsonl, eval compare's
JSON, tasks results), checked on what matplotlib holds rather than on pixels: every series is drawn
and a one-point series shows, step ticks are integers, a near-zero monitor keeps its own axes, a
quantity spanning decades is on a log scale, the tasks bars are the reports' numbers, and the
files are a PNG and an SVG whose text is searchable. (`linear-ard restore` calling the script is
test_restore_options.py::test_curves_plotted_after_the_run.)

    pytest -q tests/python/test_plot.py
"""

import importlib.util
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "plot.py"
_spec = importlib.util.spec_from_file_location("plot", SCRIPT)
plot = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(plot)


def axes_by_title(fig):
    return {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}


def one_step_records():
    """A 1-step restore: one training record, held-out evaluations before and after."""
    return [
        {"step": 0, "eval": True, "relation_loss": 1.2, "logit_kl": 0.0012, "attention_kl": 0.5},
        {"step": 1, "stage": 1, "loss": 1.1, "loss_q": 0.5, "loss_k": 0.4, "loss_v": 0.0002, "lr": 1e-3},
        {"step": 1, "eval": True, "relation_loss": 1.0, "logit_kl": 0.0009, "attention_kl": 0.4},
    ]


def test_curves_one_step_run_draws_every_series():
    fig = plot.curves_figure(one_step_records())
    axes = axes_by_title(fig)
    assert set(axes) == {"training loss (optimised)", "loss parts", "held-out relation_loss", "held-out logit_kl",
                         "held-out attention_kl", "learning rate"}
    loss = axes["training loss (optimised)"]
    (line,) = loss.get_lines()
    assert list(line.get_xdata()) == [1] and list(line.get_ydata()) == [1.1]
    assert line.get_marker() not in (None, "", "None")  # one point: only a marker shows it
    for ax in axes.values():
        fig.canvas.draw()
        ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
        assert len(ticks) >= 2 and all(float(t).is_integer() for t in ticks), (ax.get_title(), ticks)
        assert ax.xaxis.get_major_formatter().get_offset() == ""


def test_curves_near_zero_monitor_is_not_flattened():
    fig = plot.curves_figure(one_step_records())
    axes = axes_by_title(fig)
    low, high = axes["held-out logit_kl"].get_ylim()
    assert high - low < 0.001  # its own axes: 0.0009 .. 0.0012 fills them
    parts = axes["loss parts"]
    assert parts.get_yscale() == "log"  # 0.0002 .. 0.5: more than two decades
    assert axes["held-out relation_loss"].get_yscale() == "linear"


def test_curves_stages_and_pretrain_monitors():
    records = [{"step": s, "stage": 1 if s <= 3 else 2, "loss": 2.0 / s} for s in range(1, 7)]
    records += [{"step": s, "eval": True, "loss_lm": 2.0 / (s + 1), "perplexity": 8.0 / (s + 1)} for s in (0, 6)]
    axes = axes_by_title(plot.curves_figure(records))
    labels = [line.get_label() for line in axes["training loss (optimised)"].get_lines()]
    assert labels == ["stage 1", "stage 2"]
    assert "held-out loss_lm" in axes and "held-out perplexity" in axes and "loss parts" not in axes


def test_curves_validation_panels_mark_the_chosen_step(tmp_path):
    """A restore's validations: the KL to the native model on its own axes, the perplexity beside
    the native model's, passkey per length, and the step the run wrote marked on each, read from
    training_summary.json beside the metrics by the command line."""
    records = [{"step": 1, "stage": 1, "loss": 1.0, "lr": 1e-3}]
    for step, kl, p4, p8 in ((0, 0.9, 0.1, 0.0), (5, 0.4, 0.6, 0.3), (10, 0.3, 0.7, 0.5)):
        records.append({"step": step, "stage": 1, "eval": True, "val_kl": kl, "val_ppl": 20 + kl, "native_ppl": 19.5,
                        "passkey": {"4096": p4, "8192": p8}, "passkey_mean": (p4 + p8) / 2})
    axes = axes_by_title(plot.curves_figure(records, chosen_step=5))
    ppl = [line.get_label() for line in axes["validation perplexity"].get_lines()]
    assert ppl[:2] == ["val_ppl", "native_ppl"]
    passkey = [line.get_label() for line in axes["validation passkey accuracy"].get_lines()]
    assert passkey[:2] == ["4096 tokens", "8192 tokens"]
    for title in ("held-out val_kl", "validation perplexity", "validation passkey accuracy"):
        marks = [line for line in axes[title].get_lines() if line.get_label() == "model (step 5)"]
        assert len(marks) == 1 and list(marks[0].get_xdata()) == [5, 5], title
    assert all(line.get_label() != "model (step 5)" for line in axes["learning rate"].get_lines())
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(r) + "\n" for r in records))
    (tmp_path / "training_summary.json").write_text(json.dumps({"validation": {"chosen_step": 10}}))
    assert subprocess.run([sys.executable, str(SCRIPT), "curves", str(metrics)], capture_output=True).returncode == 0
    svg = (tmp_path / "training_curves.svg").read_text()
    assert "model (step 10)" in svg


def lm_eval_results(values, order):
    return {"results": {t: {"alias": t, "acc,none": v, "acc_norm,none": v / 2} for t, v in values.items()},
            "linear_ard": {"order": order, "avg_metric": "acc", "avg": sum(values.values()) / len(values)}}


def test_compare_figure_lengths_and_tasks():
    report = {"reference": "native", "models": [
        {"name": "native", "ppl": [{"ctx_len": 256, "ppl": 10.0}],
         "passkey": {"rows": [{"length": 512, "depth": 0.0, "accuracy": 1.0}, {"length": 512, "depth": 1, "accuracy": 0.5}]},
         "tasks": lm_eval_results({"mmlu": 0.4, "lambada": 0.6}, ["mmlu", "lambada"])},
        {"name": "restored", "ppl": [{"ctx_len": 256, "ppl": 11.0}],
         "passkey": {"rows": [{"length": 512, "depth": 0.0, "accuracy": 0.0}, {"length": 512, "depth": 1, "accuracy": 0.0}]},
         "tasks": lm_eval_results({"mmlu": 0.3, "lambada": 0.5}, ["mmlu", "lambada"])},
    ]}
    fig = plot.compare_figure(report)
    axes = axes_by_title(fig)
    ppl = axes["perplexity"]
    assert [list(line.get_ydata()) for line in ppl.get_lines()] == [[10.0], [11.0]]
    assert all(line.get_marker() not in (None, "", "None") for line in ppl.get_lines())
    assert [t.get_text() for t in ppl.get_xticklabels()] == ["256"]
    passkey = axes["passkey accuracy (%, mean over depths)"]
    assert [list(line.get_ydata()) for line in passkey.get_lines()] == [[75.0], [0.0]]
    bars = axes["tasks (headline metric)"]
    heights = [round(p.get_height(), 6) for p in bars.patches]
    assert heights == [40.0, 60.0, 50.0, 30.0, 50.0, 40.0]  # per model: mmlu, lambada, Avg.
    assert [t.get_text() for t in bars.get_xticklabels()] == ["mmlu", "lambada", "Avg."]


def diagnose_report(layers, relation_long):
    """A diagnose report: native and two scalings, the relation KL of `layers`."""
    def rel(scale):
        return {"layers": layers, "q": [scale * (i + 1) for i in range(len(layers))],
                "k": [scale * 2 * (i + 1) for i in range(len(layers))], "v": [scale * 0.01] * len(layers)}
    rows = [{"name": "native", "kl": 0, "ppl": 10.0, "passkey": {"128": 1.0}, "relation": rel(0)}]
    for name, scale, passkey in (("pi", 1.0, {"128": 0.2, "256": 0.0}), ("yarn", 0.1, {"128": 0.8, "256": 0.6})):
        rows.append({"name": name, "kl": scale, "ppl": 10 + scale, "passkey": passkey, "relation": rel(scale)})
        if relation_long:
            rows[-1]["relation_long"] = rel(scale * 3)
    return {"ctx": 64, "passkey": {"lengths": [128, 256], "prompts_per_length": 5},
            "relation_length": 256 if relation_long else 0, "rows": rows}


@pytest.mark.parametrize("all_layers", [False, True])
def test_diagnose_figure_panels(all_layers):
    fig = plot.diagnose_figure(diagnose_report([0, 1, 2] if all_layers else [2], relation_long=not all_layers))
    axes = axes_by_title(fig)
    kl = axes["KL to native at 64 tokens"]
    assert [round(p.get_height(), 6) for p in kl.patches] == [1.0, 0.1]
    assert [t.get_text() for t in kl.get_xticklabels()] == ["pi", "yarn"]
    passkey = axes["passkey accuracy (%, 5 prompts a length)"]
    assert [list(line.get_ydata()) for line in passkey.get_lines()] == [[100.0], [20.0, 0.0], [80.0, 60.0]]
    if all_layers:
        q = axes["Q/Q relation KL by layer (C = 64)"]
        assert [list(line.get_xdata()) for line in q.get_lines()] == [[0, 1, 2], [0, 1, 2]]
        assert [list(line.get_ydata()) for line in q.get_lines()][0] == [1.0, 2.0, 3.0]
        assert "K/K relation KL by layer (C = 64)" in axes and "V/V relation KL by layer (C = 64)" in axes
    else:
        final = axes["final layer's relation KL (C = 64)"]
        assert [round(p.get_height(), 6) for p in final.patches] == [1.0, 0.1, 2.0, 0.2, 0.01, 0.001]
        at_length = axes["final layer's relation KL at 256 tokens"]
        assert [round(p.get_height(), 6) for p in at_length.patches] == [3.0, 0.3, 6.0, 0.6, 0.03, 0.003]


def test_diagnose_command_line_writes_png_and_svg(tmp_path):
    report = tmp_path / "diagnose.json"
    report.write_text(json.dumps(diagnose_report([3], relation_long=False)))
    r = subprocess.run([sys.executable, str(SCRIPT), "diagnose", str(report)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "diagnose.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    texts = "".join(t.text or "" for t in ET.parse(tmp_path / "diagnose.svg").getroot().iter("{http://www.w3.org/2000/svg}text"))
    assert "KL to native at 64 tokens" in texts
    report.write_text(json.dumps({"ctx": 64, "rows": [{"name": "native"}]}))
    r = subprocess.run([sys.executable, str(SCRIPT), "diagnose", str(report), "-o", str(tmp_path / "bad")],
                       capture_output=True, text=True)
    assert r.returncode == 1 and "no scaling" in r.stderr and not (tmp_path / "bad.png").exists()


def tune_report(passkey):
    """A tune.json: three trials (one failed), the second the winner, and the final run."""
    def chosen(kl, pk):
        return {"step": 4, "val_kl": kl, **({"passkey_mean": pk} if passkey else {})}
    return {"trials": [
        {"name": "trial-00", "settings": ["lr=1e-3"], "status": "ok", "chosen": chosen(0.5, 0.4)},
        {"name": "trial-01", "settings": ["lr=3e-3"], "status": "ok", "chosen": chosen(0.3, 0.6)},
        {"name": "trial-02", "settings": ["lr=1e-2"], "status": "failed", "error": "diverged"}],
        "winner": 1, "final": {"chosen": chosen(0.2, 0.7)}}


@pytest.mark.parametrize("passkey", [True, False])
def test_tune_figure_places_each_scored_trial(passkey, tmp_path):
    fig = plot.tune_figure(tune_report(passkey))
    (ax,) = [a for a in fig.axes if a.get_visible()]
    if passkey:
        points = [tuple(c.get_offsets()[0]) for c in ax.collections]
        assert points == [(0.5, 40.0), (0.3, 60.0), (0.2, 70.0)]
        assert [t.get_text() for t in ax.texts] == ["lr=1e-3", "lr=3e-3"]
    else:
        assert [round(p.get_height(), 6) for p in ax.patches] == [0.5, 0.3]
        assert "winner: trial-01" in ax.get_title()
    report = tmp_path / "tune.json"
    report.write_text(json.dumps(tune_report(passkey)))
    r = subprocess.run([sys.executable, str(SCRIPT), "tune", str(report)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "tune.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and (tmp_path / "tune.svg").exists()


def test_tasks_figure_reads_lm_eval_results_without_our_section():
    """lm-eval's own results JSON (no linear_ard section): tasks in name order, acc."""
    theirs = {"results": {"piqa": {"acc,none": 0.7, "acc_norm,none": 0.72}, "arc_easy": {"acc,none": 0.5}}}
    fig = plot.tasks_figure(["lm-eval"], [theirs])
    (ax,) = fig.axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["arc_easy", "piqa", "Avg."]
    assert [round(p.get_height(), 6) for p in ax.patches] == [50.0, 70.0, 60.0]


def test_command_line_writes_png_and_svg(tmp_path):
    metrics = tmp_path / "metrics.jsonl"
    metrics.write_text("".join(json.dumps(r) + "\n" for r in one_step_records()) + '{"step": 2, "sta')
    r = subprocess.run([sys.executable, str(SCRIPT), "curves", str(metrics)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    png, svg = tmp_path / "training_curves.png", tmp_path / "training_curves.svg"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    root = ET.parse(svg).getroot()
    texts = "".join(t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text"))
    assert "held-out logit_kl" in texts and "optimizer step" in texts

    report = tmp_path / "cmp.json"
    report.write_text(json.dumps({"models": [{"name": "a"}]}))
    r = subprocess.run([sys.executable, str(SCRIPT), "compare", str(report)], capture_output=True, text=True)
    assert r.returncode == 1 and "no evaluation to plot" in r.stderr
    assert not (tmp_path / "cmp.png").exists()


@pytest.mark.parametrize("names", [["a"], ["a", "b", "c"]])
def test_tasks_names_must_match_files(tmp_path, names):
    results = tmp_path / "r.json"
    results.write_text(json.dumps(lm_eval_results({"t": 0.5}, ["t"])))
    r = subprocess.run([sys.executable, str(SCRIPT), "tasks", str(results), str(results), "--names", *names,
                        "-o", str(tmp_path / "out")], capture_output=True, text=True)
    assert r.returncode == 2 and "--names has" in r.stderr
