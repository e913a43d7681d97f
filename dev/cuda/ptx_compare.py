#!/usr/bin/env python3
"""Compares the kernels of two dev/cuda/ptxas_report.sh output folders, entry by entry.

Each .entry of every OUT_DIR/<object>.<arch>.ptx is normalised (mangled names, labels and virtual
register numbers canonical) and compared with the entry of the same demangled name in the other
folder; equal PTX gives equal SASS. Prints one line per kernel (same / DIFF with the differing lines
/ new / gone) and the ptxas figures of both.

    dev/cuda/ptx_compare.py BEFORE_DIR AFTER_DIR [OLD=NEW ...]

OLD=NEW renames BEFORE's kernels (substring of the demangled name) for kernels whose template
arguments changed, e.g. ", true>=>" for relation_kl_bwd_wgmma_kernel<T, D, true> -> <T, D>.
"""

import difflib
import glob
import os
import re
import subprocess
import sys


def entries(path, renames=()):
    text = open(path).read()
    found = re.findall(r"^\.visible \.entry (\w+)\((.*?)^}", text, re.S | re.M)
    names = subprocess.run(["c++filt"], input="\n".join(m for m, _ in found), capture_output=True,
                           text=True).stdout.split("\n")
    result = {}
    for name, (_, body) in zip(names, found):
        for old, new in renames:
            name = name.replace(old, new)
        body = re.sub(r"_ZN[0-9A-Za-z_]+", "NAME", body)
        body = re.sub(r"\$L__\w+", "LABEL", body)
        maps = {}

        def rename(m):
            table = maps.setdefault(m.group(1), {})
            return table.setdefault(m.group(0), f"%{m.group(1)}#{len(table)}")

        body = re.sub(r"%(rd|r|f|p|rs|fd)(\d+)\b", rename, body)
        body = re.sub(r"\.reg \.\w+\s+%\w+<\d+>;", ".reg", body)
        result[name] = body.splitlines()
    return result


def ptxas(folder, renames=()):
    rows = {}
    for line in open(os.path.join(folder, "ptxas.tsv")):
        name, *figures = line.rstrip("\n").split("\t")
        for old, new in renames:
            name = name.replace(old, new)
        rows[name] = figures
    return rows


def main():
    before, after = sys.argv[1], sys.argv[2]
    renames = [tuple(arg.split("=", 1)) for arg in sys.argv[3:]]
    figures_before, figures_after = ptxas(before, renames), ptxas(after)
    for path in sorted(glob.glob(os.path.join(after, "*.ptx"))):
        old_path = os.path.join(before, os.path.basename(path))
        old = entries(old_path, renames) if os.path.exists(old_path) else {}
        new = entries(path)
        for name in sorted(set(old) | set(new)):
            if name not in new:
                print(f"gone  {name}")
                continue
            f_new = " ".join(figures_after.get(name, []))
            if name not in old:
                print(f"new   {name}  [{f_new}]")
                continue
            diff = [l for l in difflib.unified_diff(old[name], new[name], lineterm="", n=0)
                    if l[:1] in "+-" and not l.startswith(("+++", "---"))]
            f_old = " ".join(figures_before.get(name, []))
            print(f"{'same' if not diff else 'DIFF'}  {name}  [{f_old}] -> [{f_new}]")
            for line in diff[:6]:
                print(f"        {line.strip()}")


if __name__ == "__main__":
    main()
