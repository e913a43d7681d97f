"""experiments/token_efficiency.py: the CPT budget matching a LinearARD run, on synthetic reports whose
crossing points are known in closed form (the curve is a power law, so log-log interpolation is
exact), bounds at both ends, and errors naming what is missing."""
import json
import math
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "experiments" / "token_efficiency.py"
sys.path.insert(0, str(ROOT / "experiments"))
import token_efficiency  # noqa: E402


def write_runs(tmp_path, models):
    """models: name -> (tokens, ppl, cloze acc); writes the report and each run's summary."""
    runs = tmp_path / "runs"
    entries = []
    for name, (tokens, ppl, acc) in models.items():
        (runs / name).mkdir(parents=True)
        (runs / name / "training_summary.json").write_text(json.dumps({"token_budget": {"tokens": tokens}}))
        entries.append({"name": name, "ppl": [{"ppl": ppl}], "tasks": {"linear_ard": {"avg": acc}}})
    report = tmp_path / "budget.json"
    report.write_text(json.dumps({"reference": "native", "models": entries}))
    return report, runs


def test_crossing_is_exact_on_a_power_law():
    rng = random.Random()
    a, b = rng.uniform(50, 200), rng.uniform(0.05, 0.4)
    curve = [(t, a * t ** -b) for t in (1e5, 2e5, 4e5, 8e5, 6.4e6)]
    t_star = rng.uniform(1.1e5, 6e6)
    rel, t = token_efficiency.crossing(curve, a * t_star ** -b, lower_is_better=True, log_value=True)
    assert rel == "=" and t == pytest.approx(t_star, rel=1e-9)


def test_crossing_bounds_and_higher_is_better():
    curve = [(1e6, 80.0), (2e6, 70.0), (4e6, 60.0)]
    assert token_efficiency.crossing(curve, 90.0, True, True) == ("<=", 1e6)
    assert token_efficiency.crossing(curve, 50.0, True, True) == (">", 4e6)
    acc = [(1e6, 5.0), (2e6, 7.0)]
    rel, t = token_efficiency.crossing(acc, 6.0, lower_is_better=False, log_value=False)
    assert rel == "=" and t == pytest.approx(math.sqrt(2) * 1e6)


def test_script_table(tmp_path):
    # CPT ppl = 100 * (tokens / 1e6) ** -0.5; ARD reaches 50 with 1M tokens: CPT needs 4M (4x).
    cpt = {f"cpt_{i}": (t, 100 * (t / 1e6) ** -0.5, 0.05) for i, t in enumerate((5e5, 1e6, 2e6, 8e6))}
    report, runs = write_runs(tmp_path, {"native": (0, 40.0, 0.07), "ard": (1_000_000, 50.0, 0.06), **cpt})
    svg = tmp_path / "plot.svg"
    out = subprocess.run([sys.executable, str(SCRIPT), str(report), str(runs), "--svg", str(svg)], capture_output=True,
                         text=True, check=True).stdout
    import xml.dom.minidom
    xml.dom.minidom.parse(str(svg))  # well-formed
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # What the figure holds: the CPT curve through its 4 runs, the LinearARD run, the reference line.
    fig = token_efficiency.figure([(n, t, p) for n, (t, p, _) in cpt.items()], [("ard", 1_000_000, 50.0)],
                                  ("native", 40.0))
    curve, runs_, ref = fig.axes[0].get_lines()
    assert list(curve.get_xdata()) == [5e5, 1e6, 2e6, 8e6] and list(runs_.get_ydata()) == [50.0]
    assert list(ref.get_ydata()) == [40.0, 40.0] and fig.axes[0].get_xscale() == "log"
    row = next(line for line in out.splitlines() if line.startswith("| ard |") and "PPL" in line)
    assert "| 4.00 M | 4.00x |" in row
    cloze = next(line for line in out.splitlines() if line.startswith("| ard |") and "cloze" in line)
    assert "| >8.00 M | >8.00x |" in cloze


def test_script_errors_name_the_problem(tmp_path):
    report, runs = write_runs(tmp_path, {"ard": (1_000_000, 50.0, 0.06), "cpt_a": (1e6, 60.0, 0.05)})
    r = subprocess.run([sys.executable, str(SCRIPT), str(report), str(runs)], capture_output=True, text=True)
    assert r.returncode != 0 and "at least two 'cpt*' models" in r.stderr
    report, runs = write_runs(tmp_path / "b", {"ard": (1e6, 50.0, 0.06), "cpt_a": (1e6, 60.0, 0.05),
                                               "cpt_b": (2e6, 55.0, 0.05)})
    (runs / "cpt_b" / "training_summary.json").unlink()
    r = subprocess.run([sys.executable, str(SCRIPT), str(report), str(runs)], capture_output=True, text=True)
    assert r.returncode != 0 and "run 'cpt_b'" in r.stderr
