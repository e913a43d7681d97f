"""Reading the markdown reports of `linear-ard eval compare` (experiments/budget_curve.py,
experiments/seed_table.py): each '## ' section's first table as rows of {column: cell}."""

import sys


def tables(path, tool):
    """{section title: [{column: cell}, ...]}: the first table under each '## ' heading (`tool` names
    the script in the error when the file cannot be read)."""
    try:
        lines = open(path, encoding="utf-8").read().splitlines()
    except OSError as e:
        sys.exit(f"{tool}: cannot read {path}: {e}")
    out, title, header, done = {}, None, None, set()
    for line in lines:
        if line.startswith("## "):
            title, header = line[3:].strip(), None
        elif not line.startswith("|"):
            if title in out:
                done.add(title)  # later tables under the same heading are not read
            header = None
        elif title and title not in done:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if header is None:
                header = cells
            elif not set(line) <= set("|-: "):
                out.setdefault(title, []).append(dict(zip(header, cells)))
    return out
