"""experiments/seed_table.py: means and 95 % t-intervals over seeds of `linear-ard eval compare` markdown
reports (the layout of the files in experiments/results/real, filled with fresh random numbers), checked
against numpy and scipy's own interval; a model's cells from the first report that has it, Avg. left
out, Rec. kept only against the reference model, --models, and errors naming the bad input."""
import random
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
from script_tool import script_run  # noqa: E402


def report(path, rows):
    """rows = {model: (ppl2k, ppl8k, cloze, ruler8k[, rec])}; Rec. (55 when not given) and a per-task
    RULER table as in the real files."""
    lines = ["## Perplexity", "", "| model | PPL@2048 | PPL@8192 |", "|---|---:|---:|"]
    lines += [f"| {m} | {r[0]:.3f} | {r[1]:.3f} |" for m, r in rows.items()]
    lines += ["", "## Tasks (%, Rec. against native)", "", "| model | cloze | Avg. | Rec. |", "|---|---:|---:|---:|"]
    lines += [f"| {m} | {r[2]:.2f} | {r[2]:.2f} | {(r[4] if len(r) > 4 else 55.0):.2f} |" for m, r in rows.items()]
    lines += ["", "## RULER (%)", "", "| model | 8192 | Avg. all |", "|---|---:|---:|"]
    lines += [f"| {m} | {r[3]:.1f} | {r[3]:.1f} |" for m, r in rows.items()]
    lines += ["", "| task | a 8192 |", "|---|---:|", "| niah_single_1 | 99.0 |"]
    path.write_text("\n".join(lines) + "\n")
    return path


def run(*args):
    return script_run("experiments/seed_table.py", *args)


def parsed(stdout):
    """{(section, model): {column: (mean, half or None), 'seeds': n}} of the printed tables."""
    out, section, header = {}, None, None
    for line in stdout.splitlines():
        if line.startswith("## "):
            section, header = line[3:].split(" (")[0], None
        elif line.startswith("|") and not set(line) <= set("|-: "):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if header is None:
                header = cells
                continue
            row = {"seeds": int(cells[1])}
            for col, cell in zip(header[2:], cells[2:]):
                mean, _, half = cell.partition(" ± ")
                row[col] = (float(mean), float(half) if half else None)
            out[(section, cells[0])] = row
    return out


def rnd(rng):
    return (rng.uniform(20, 200), rng.uniform(20, 200), rng.uniform(0, 30), rng.uniform(0, 100), rng.uniform(50, 110))


def expected(xs):
    xs = np.round(np.array(xs, dtype=float), 3)
    if len(xs) == 1:
        return xs[0], None
    lo, hi = stats.t.interval(0.95, len(xs) - 1, loc=xs.mean(), scale=xs.std(ddof=1) / np.sqrt(len(xs)))
    return xs.mean(), (hi - lo) / 2


def test_means_and_intervals_against_scipy(tmp_path):
    rng = random.Random()
    n = rng.randint(2, 5)
    rows = {"native": rnd(rng)}
    rows.update({("ard" if k == 0 else f"ard_s{k}"): rnd(rng) for k in range(n)})
    r = run(report(tmp_path / "a.md", rows))
    assert r.returncode == 0, r.stderr
    got = parsed(r.stdout)
    seeds = [v for m, v in rows.items() if m != "native"]
    assert got[("Perplexity", "ard")]["seeds"] == n
    for col, i, digits in (("PPL@2048", 0, 3), ("PPL@8192", 1, 3)):
        mean, half = expected([round(s[i], digits) for s in seeds])
        assert abs(got[("Perplexity", "ard")][col][0] - mean) < 0.006
        assert abs(got[("Perplexity", "ard")][col][1] - half) < 0.006
    mean, half = expected([round(s[2], 2) for s in seeds])
    assert abs(got[("Tasks", "ard")]["cloze"][0] - mean) < 0.006 and abs(got[("Tasks", "ard")]["cloze"][1] - half) < 0.006
    assert got[("Perplexity", "native")]["seeds"] == 1 and got[("Perplexity", "native")]["PPL@2048"][1] is None
    assert "Avg." not in got[("Tasks", "ard")]
    mean, half = expected([round(s[4], 2) for s in seeds])  # Rec.: this report's first model is native
    assert abs(got[("Tasks", "ard")]["Rec."][0] - mean) < 0.006 and abs(got[("Tasks", "ard")]["Rec."][1] - half) < 0.006
    assert "Avg. all" in got[("RULER", "ard")]
    assert ("RULER", "niah_single_1") not in got  # only each section's first table


def test_first_report_wins_and_models_order(tmp_path):
    rng = random.Random()
    new = {"ard": rnd(rng), "ard_s1": rnd(rng)}
    old = {"ard": rnd(rng), "ard_s1": rnd(rng), "cpt": rnd(rng)}
    r = run(report(tmp_path / "new.md", new), report(tmp_path / "old.md", old), "--models", "cpt", "ard",
            "-o", tmp_path / "t.md")
    assert r.returncode == 0, r.stderr
    got = parsed(r.stdout)
    assert abs(got[("Perplexity", "ard")]["PPL@2048"][0] - expected([round(new[m][0], 3) for m in new])[0]) < 0.006
    assert abs(got[("Perplexity", "cpt")]["PPL@2048"][0] - round(old["cpt"][0], 3)) < 0.006
    body = [line.split("|")[1].strip() for line in r.stdout.split("## Tasks")[0].splitlines() if line.startswith("| ")]
    assert body[1:] == ["cpt", "ard"]
    assert "Rec." not in got[("Tasks", "ard")]  # neither report's first model is native
    assert (tmp_path / "t.md").read_text().rstrip("\n") == r.stdout.rstrip("\n")


def test_rec_against_another_reference(tmp_path):
    rng = random.Random()
    rows = {"base": rnd(rng), "ard": rnd(rng), "ard_s1": rnd(rng)}
    assert "Rec." not in parsed(run(report(tmp_path / "a.md", rows)).stdout)[("Tasks", "ard")]
    r = run(tmp_path / "a.md", "--reference", "base")
    assert r.returncode == 0, r.stderr
    mean, half = expected([round(rows[m][4], 2) for m in ("ard", "ard_s1")])
    got = parsed(r.stdout)[("Tasks", "ard")]["Rec."]
    assert abs(got[0] - mean) < 0.006 and abs(got[1] - half) < 0.006


def test_errors_name_the_problem(tmp_path):
    rng = random.Random()
    good = report(tmp_path / "a.md", {"ard": rnd(rng)})
    r = run(good, "--models", "ard", "nope")
    assert r.returncode != 0 and "no model nope" in r.stderr
    r = run(tmp_path / "missing.md")
    assert r.returncode != 0 and "missing.md" in r.stderr
    bad = tmp_path / "nan.md"
    bad.write_text("## Perplexity\n\n| model | PPL@2048 |\n|---|---:|\n| ard | nan |\n")
    r = run(bad)
    assert r.returncode != 0 and "ard" in r.stderr and "PPL@2048" in r.stderr


def test_plot_draws_every_section_and_model(tmp_path):
    rng = random.Random()
    rows = {"native": rnd(rng), "ard": rnd(rng), "ard_s1": rnd(rng), "cpt_qkv": rnd(rng)}
    r = run(report(tmp_path / "a.md", rows), "--plot", tmp_path / "fig")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "fig.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    svg = (tmp_path / "fig.svg").read_text()
    for text in ("Perplexity", "Tasks", "RULER", "PPL@2048", "native (1)", "ard (2)", "cpt_qkv (1)"):
        assert text in svg, text
    assert not list(tmp_path.glob("*.tmp"))


def bar_colours(svg):
    """[{fill colour of the bars} per axes] of a matplotlib SVG (the axes' white background left out)."""
    ns = {"s": "http://www.w3.org/2000/svg"}
    out = []
    for axes in ET.parse(svg).getroot().iterfind(".//s:g[@id]", ns):
        if not axes.get("id").startswith("axes_"):
            continue
        fills = set()
        for patch in axes.iterfind("s:g", ns):
            if patch.get("id", "").startswith("patch_"):
                for path in patch.iterfind("s:path", ns):
                    style = dict(kv.split(":", 1) for kv in path.get("style", "").replace(" ", "").split(";") if kv)
                    if style.get("fill", "none") not in ("none", "#ffffff"):
                        fills.add(style["fill"])
        out.append(fills)
    return out


def test_plot_keeps_a_model_colour_in_every_panel(tmp_path):
    """A section without some models (RULER without native and ard here) draws the others in their own
    colours, not in the first colours of the cycle."""
    rng = random.Random()
    a = tmp_path / "a.md"
    a.write_text("## Perplexity\n\n| model | PPL@2048 |\n|---|---:|\n"
                 + "".join(f"| {m} | {rng.uniform(20, 200):.3f} |\n" for m in ("native", "ard", "cpt_qkv")))
    b = tmp_path / "b.md"
    b.write_text(f"## RULER (%)\n\n| model | 8192 |\n|---|---:|\n| cpt_qkv | {rng.uniform(1, 99):.1f} |\n")
    r = run(a, b, "--plot", tmp_path / "fig")
    assert r.returncode == 0, r.stderr
    ppl, ruler = bar_colours(tmp_path / "fig.svg")
    assert len(ppl) == 3 and len(ruler) == 1
    cycle = [matplotlib.colors.to_hex(c) for c in plt.rcParams["axes.prop_cycle"].by_key()["color"]]
    assert ruler == {cycle[2]} and ppl == set(cycle[:3])
