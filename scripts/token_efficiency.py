#!/usr/bin/env python3
"""Token efficiency of LinearARD against CPT (issue #7, the paper's ~60x claim): from a
`linear-ard eval compare` report holding LinearARD runs (names starting with "ard") and CPT runs at
several budgets (names starting with "cpt"), and the runs' training_summary.json (exact token
budgets), finds the CPT budget whose short-context quality equals each LinearARD run's, by
interpolating the CPT curve linearly in log(tokens) (perplexity in log too), and prints the ratio
CPT tokens / LinearARD tokens as a markdown table. A ratio above 1 means LinearARD needs fewer
tokens; where CPT's smallest budget already does better, or its largest does worse, the ratio is a
bound (<= or >).

    scripts/token_efficiency.py REPORT.json RUNS_DIR [--svg PLOT.svg]

--svg also draws held-out perplexity against training tokens (both axes logarithmic): the CPT
curve and each LinearARD run as a point.
"""
import json
import math
import os
import sys


def tokens_of(runs, name):
    path = os.path.join(runs, name, "training_summary.json")
    try:
        return json.load(open(path))["token_budget"]["tokens"]
    except (OSError, KeyError, ValueError) as e:
        sys.exit(f"token_efficiency: cannot read the token budget of run '{name}' from {path}: {e}")


def crossing(curve, target, lower_is_better, log_value):
    """Tokens at which the (tokens, value) curve, sorted by tokens, first reaches target."""
    def f(v):
        return math.log(v) if log_value else v

    def good(v):
        return v <= target if lower_is_better else v >= target

    if good(curve[0][1]):
        return "<=", curve[0][0]
    for (t0, v0), (t1, v1) in zip(curve, curve[1:]):
        if good(v1):
            if f(v1) == f(v0):
                return "=", t1
            w = (f(target) - f(v0)) / (f(v1) - f(v0))
            return "=", math.exp(math.log(t0) + w * (math.log(t1) - math.log(t0)))
    return ">", curve[-1][0]


def svg_plot(cpt, ard, reference):
    """cpt, ard: [(name, tokens, ppl)]; reference: (name, ppl) drawn as a horizontal line."""
    W, H, L, R, T, B = 640, 360, 70, 170, 30, 50
    pts = cpt + ard
    xs = [math.log10(t) for _, t, _ in pts]
    ys = [math.log10(p) for _, _, p in pts] + [math.log10(reference[1])]
    x0, x1 = math.floor(min(xs) * 4) / 4, math.ceil(max(xs) * 4) / 4
    y0, y1 = min(ys) - 0.03, max(ys) + 0.03

    def X(t):
        return L + (math.log10(t) - x0) / (x1 - x0) * (W - L - R)

    def Y(p):
        return T + (y1 - math.log10(p)) / (y1 - y0) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           '<rect width="100%" height="100%" fill="white"/>',
           f'<text x="{L}" y="18" font-size="13" font-weight="bold">held-out perplexity vs training tokens</text>',
           f'<rect x="{L}" y="{T}" width="{W - L - R}" height="{H - T - B}" fill="none" stroke="#444"/>']
    for e in range(math.floor(x0), math.ceil(x1) + 1):
        for m in (1, 2, 5):
            t = m * 10 ** e
            if x0 <= math.log10(t) <= x1:
                out.append(f'<text x="{X(t):.1f}" y="{H - B + 14}" text-anchor="middle">{t / 1e6:g}M</text>')
    for p in (40, 50, 60, 70, 80, 100, 120, 150, 200):
        if y0 <= math.log10(p) <= y1:
            out.append(f'<text x="{L - 5}" y="{Y(p) + 4:.1f}" text-anchor="end">{p}</text>')
            out.append(f'<line x1="{L}" x2="{W - R}" y1="{Y(p):.1f}" y2="{Y(p):.1f}" stroke="#ddd"/>')
    out.append(f'<text x="{(L + W - R) / 2}" y="{H - 12}" text-anchor="middle">tokens (log)</text>')
    ry = Y(reference[1])
    out.append(f'<line x1="{L}" x2="{W - R}" y1="{ry:.1f}" y2="{ry:.1f}" stroke="#888" stroke-dasharray="4 3"/>')
    out.append(f'<text x="{W - R + 6}" y="{ry + 4:.1f}" fill="#555">{reference[0]} {reference[1]:.1f}</text>')
    line = " ".join(f"{X(t):.1f},{Y(p):.1f}" for _, t, p in cpt)
    out.append(f'<polyline points="{line}" fill="none" stroke="#1f77b4" stroke-width="2"/>')
    for name, t, p in cpt:
        out.append(f'<circle cx="{X(t):.1f}" cy="{Y(p):.1f}" r="4" fill="#1f77b4"/>')
        out.append(f'<text x="{X(t) + 6:.1f}" y="{Y(p) - 6:.1f}" fill="#1f77b4">{name}</text>')
    for name, t, p in ard:
        out.append(f'<rect x="{X(t) - 5:.1f}" y="{Y(p) - 5:.1f}" width="10" height="10" fill="#d62728"/>')
        out.append(f'<text x="{X(t) + 8:.1f}" y="{Y(p) + 4:.1f}" fill="#d62728">{name}</text>')
    out.append(f'<text x="{W - R + 6}" y="{T + 12}" fill="#1f77b4">CPT (full model)</text>')
    out.append(f'<text x="{W - R + 6}" y="{T + 28}" fill="#d62728">LinearARD</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    args = sys.argv[1:]
    svg = None
    if "--svg" in args:
        i = args.index("--svg")
        if i + 1 >= len(args):
            sys.exit("token_efficiency: --svg needs a file name")
        svg = args[i + 1]
        del args[i:i + 2]
    if len(args) != 2:
        sys.exit(__doc__)
    report = json.load(open(args[0]))
    runs = args[1]
    metrics = [("held-out PPL", lambda m: m["ppl"][0]["ppl"], True, True)]
    if all("tasks" in m for m in report["models"]):
        metrics.append(("cloze acc %", lambda m: 100 * m["tasks"]["linear_ard"]["avg"], False, False))
    ard = [m for m in report["models"] if m["name"].startswith("ard")]
    cpt = [m for m in report["models"] if m["name"].startswith("cpt")]
    if not ard or len(cpt) < 2:
        sys.exit("token_efficiency: the report needs an 'ard*' model and at least two 'cpt*' models")
    print("| LinearARD run | tokens | metric | value | CPT tokens for the same value | CPT / LinearARD tokens |")
    print("|---|---:|---|---:|---:|---:|")
    for label, value, lower, log_value in metrics:
        curve = sorted((tokens_of(runs, m["name"]), value(m)) for m in cpt)
        for m in ard:
            t = tokens_of(runs, m["name"])
            rel, ct = crossing(curve, value(m), lower, log_value)
            ratio = ct / t
            print(f"| {m['name']} | {t / 1e6:.2f} M | {label} | {value(m):.2f} | {rel if rel != '=' else ''}"
                  f"{ct / 1e6:.2f} M | {rel if rel != '=' else ''}{ratio:.2f}x |")
    print()
    if svg:
        ppl = lambda m: m["ppl"][0]["ppl"]  # noqa: E731
        ref = next((m for m in report["models"] if m["name"] == report.get("reference")), None)
        body = svg_plot(sorted(((m["name"], tokens_of(runs, m["name"]), ppl(m)) for m in cpt), key=lambda x: x[1]),
                        [(m["name"], tokens_of(runs, m["name"]), ppl(m)) for m in ard],
                        (ref["name"], ppl(ref)) if ref else (cpt[0]["name"], ppl(cpt[0])))
        with open(svg + ".tmp", "w") as f:
            f.write(body)
        os.replace(svg + ".tmp", svg)
    print("CPT curve: " + ", ".join(f"{m['name']} {tokens_of(runs, m['name']) / 1e6:.2f} M tokens "
                                    f"PPL {m['ppl'][0]['ppl']:.2f}" for m in sorted(cpt, key=lambda m: tokens_of(runs, m["name"]))))


if __name__ == "__main__":
    main()
