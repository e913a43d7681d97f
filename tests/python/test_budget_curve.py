"""experiments/budget_curve.py: the values it reads from `linear-ard eval compare` markdown reports (the
layout of the files in experiments/results/real, filled with fresh random numbers), merging of several
reports of one budget, --rename, the budget suffix rule, the plot files, and errors naming the bad
argument."""
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_tool import script_run  # noqa: E402


def report(path, rows, ruler=True):
    """A report in eval compare's layout: rows = {model: (ppl2k, rec, ruler_avg)}; a per-task RULER
    table follows the summary one, as in the real files."""
    lines = ["## Perplexity", "", "| model | PPL@2048 | PPL@8192 |", "|---|---:|---:|"]
    lines += [f"| {m} | {p:.3f} | {p * 0.9:.3f} |" for m, (p, _, _) in rows.items()]
    lines += ["", "## Tasks (%, Rec. against native)", "", "| model | cloze | Avg. | Rec. |", "|---|---:|---:|---:|"]
    lines += [f"| {m} | {r / 4:.2f} | {r / 4:.2f} | {r:.2f} |" for m, (_, r, _) in rows.items()]
    if ruler:
        lines += ["", "## RULER (%)", "", "| model | 8192 | 16384 | 32768 | Avg. all |", "|---|---:|---:|---:|---:|"]
        lines += [f"| {m} | 1.0 | 2.0 | 3.0 | {u:.1f} |" for m, (_, _, u) in rows.items()]
        lines += ["", "| task | a 8192 |", "|---|---:|", "| Avg. all | 99.0 |"]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args):
    return script_run("experiments/budget_curve.py", *args)


def table(stdout):
    """{(method label, budget): (ppl, rec, ruler)} of the printed markdown table ('–' -> None)."""
    out = {}
    for line in stdout.splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[(cells[0], cells[1])] = tuple(None if c == "–" else float(c) for c in cells[3:6])
    return out


def rnd(rng):
    return (round(rng.uniform(20, 200), 2), round(rng.uniform(10, 100), 2), round(rng.uniform(0, 60), 1))


def test_values_merge_rename_and_budget_suffix(tmp_path):
    rng = random.Random()
    one = {m: rnd(rng) for m in ("native", "pi4", "ard", "ard_s1", "cpt", "longred")}
    tuned = rnd(rng)
    four = {m: rnd(rng) for m in ("native", "cpt_x4", "cpt_qkv_x4", "cpt_x16")}
    a = report(tmp_path / "main.md", one, ruler=False)
    b = report(tmp_path / "ruler.md", one)
    c = report(tmp_path / "stage2.md", {"s2lr3e-3": tuned})
    d = report(tmp_path / "x4.md", four)
    r = run(f"1={a}", f"1={b}", f"1={c}", f"4={d}", "--rename", "s2lr3e-3=ard_tuned", "-o", tmp_path / "curve")
    assert r.returncode == 0, r.stderr
    got = table(r.stdout)
    assert got[("LinearARD", "1x")] == one["ard"]  # ppl, rec from main.md, ruler from ruler.md
    assert got[("LinearARD, stage-2 lr searched", "1x")] == tuned
    assert got[("CPT (full)", "1x")] == one["cpt"]
    assert got[("CPT (full)", "4x")] == four["cpt_x4"]
    assert got[("CPT (Q/K/V)", "4x")] == four["cpt_qkv_x4"]
    assert ("CPT (full)", "16x") not in got  # a _x16 row in a 4x report is not a 4x point
    assert len(got) == 6  # seeds (ard_s1) and references are not method rows
    assert (tmp_path / "curve.svg").stat().st_size > 0 and (tmp_path / "curve.png").stat().st_size > 0


def test_missing_metric_is_a_dash(tmp_path):
    a = report(tmp_path / "main.md", {"ard": (30.0, 90.0, 5.0)}, ruler=False)
    r = run(f"1={a}")
    assert r.returncode == 0, r.stderr
    assert table(r.stdout)[("LinearARD", "1x")] == (30.0, 90.0, None)


def test_errors_name_the_argument(tmp_path):
    good = report(tmp_path / "main.md", {"native": (26.0, 100.0, 22.0)})
    r = run(f"x={good}")
    assert r.returncode != 0 and f"'x={good}' is not K=REPORT.md" in r.stderr
    r = run(f"1={tmp_path / 'nope.md'}")
    assert r.returncode != 0 and "cannot read" in r.stderr and "nope.md" in r.stderr
    r = run(f"1={good}")
    assert r.returncode != 0 and "no method rows" in r.stderr
    r = run(f"1={good}", "--rename", "ard")
    assert r.returncode != 0 and "OLD=NEW" in r.stderr


def test_rec_task_is_that_task_over_native(tmp_path):
    rng = random.Random()
    cloze = {m: round(rng.uniform(5, 30), 2) for m in ("native", "cpt_qkv_x16")}
    choice = {m: round(rng.uniform(25, 40), 2) for m in cloze}
    lines = ["## Tasks (%, Rec. against native)", "", "| model | cloze | choice | Avg. | Rec. |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {m} | {cloze[m]} | {choice[m]} | 0 | 12.5 |" for m in cloze]
    path = tmp_path / "x16.md"
    path.write_text("\n".join(lines) + "\n")
    got = table(run(f"16={path}", "--rec-task", "cloze").stdout)[("CPT (Q/K/V)", "16x")]
    assert abs(got[1] - round(100 * cloze["cpt_qkv_x16"] / cloze["native"], 2)) < 1e-9
    assert table(run(f"16={path}").stdout)[("CPT (Q/K/V)", "16x")][1] == 12.5  # the report's own Rec.
    assert table(run(f"16={path}", "--rec-task", "hellaswag").stdout)[("CPT (Q/K/V)", "16x")][1] is None


def test_kl_to_native_column_and_panel(tmp_path):
    """The KL section of a report with --kl-to native becomes the last column (3 decimals) and a
    fourth panel; reports without it leave a dash."""
    rng = random.Random()
    kl = {m: round(rng.uniform(0.05, 2.0), 4) for m in ("native", "ard_x16", "longred_x16")}
    a = report(tmp_path / "x16.md", {m: rnd(rng) for m in kl})
    lines = a.read_text().splitlines()
    lines += ["", "## KL to native (nats per token, next-token distributions)", "",
              "| model | KL@2048 | KL@8192 |", "|---|---:|---:|"]
    lines += [f"| {m} | {v:.4f} | {v / 2:.4f} |" for m, v in kl.items()]
    a.write_text("\n".join(lines) + "\n")
    b = report(tmp_path / "x1.md", {"ard": rnd(rng)})
    r = run(f"16={a}", f"1={b}", "-o", tmp_path / "curve")
    assert r.returncode == 0, r.stderr
    last = {tuple(c.strip() for c in line.strip("|").split("|")[:2]): line.strip("|").split("|")[-1].strip()
            for line in r.stdout.splitlines()[2:]}
    assert last[("LinearARD", "16x")] == f"{kl['ard_x16']:.3f}"
    assert last[("LongReD", "16x")] == f"{kl['longred_x16']:.3f}"
    assert last[("LinearARD", "1x")] == "–"
    assert (tmp_path / "curve.svg").read_text().count("KL to native") >= 1
