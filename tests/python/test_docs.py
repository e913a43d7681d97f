"""The tracked tree speaks of the project only, and its docs' links lead somewhere.

- No work-log label explains anything: numbered work periods ("session N"), helpers ("helper-N"),
  bare issue numbers ("#N", "issue N"), pass numbers used as names ("the Nth pass", "passN/"),
  labels of device calls ("call X"), throwaway per-run script names ("sNN_x.sh"). Say what, when (a
  date) and why instead.
- No machine paths (/work/..., /root/..., /home/...) and no package registry's host name.
- Every relative link of a Markdown file resolves to a tracked file or folder, and a link to a heading
  of a Markdown file to a heading that exists.
- docs/cli.md names every subcommand the CLI registers.

The raw records under experiments/gpu_logs and experiments/results (logs and reports as a run wrote
them) are left as they are. git ls-files and regular expressions only: a second or two.
"""

import re
import subprocess
from pathlib import Path

import pytest

from script_tool import ROOT

RECORDS = ("experiments/gpu_logs/", "experiments/results/")
NOT_TEXT = ("data/", "models/")  # corpora and weights, not prose
MAX_BYTES = 2_000_000

LABELS = {
    "a numbered work period": re.compile(r"\b[Ss]ession \d+"),
    "a numbered helper": re.compile(r"\bhelper[- ]\d+\b"),
    # '#' after a word character, quote, '&', '/' or '#' is an anchor, a colour, an entity or a path.
    "a bare issue number": re.compile(r"(?<![\w\"'&/#])(?<!UTS )#\d{1,4}\b"),
    "an issue number": re.compile(r"\b[Ii]ssues? #?\d+"),
    "a pass number as a name": re.compile(r"\b(fourth|fifth|sixth|seventh|eighth|ninth|tenth) pass\b|\bpass[0-9]+/"),
    "a numbered round": re.compile(r"\b(second|third|fourth) round\b"),
    "a device call's label": re.compile(r"\bcalls? [A-F]\b(?![-\w])"),
    "a throwaway per-run script": re.compile(r"\bs\d{1,2}_[a-z]\w*\.sh\b"),
    "a machine path": re.compile(r"(?<![\w.$~-])/(work|root|home)/\w"),
    "a package registry's host name": re.compile(
        r"\b(pypi\.org|pythonhosted\.org|[\w.]*debian\.org|download\.pytorch\.org|anaconda\.org|"
        r"npmjs\.(org|com)|crates\.io|rubygems\.org|proxy\.golang\.org|archive\.ubuntu\.com)\b"),
}

LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_LINK = re.compile(r"^\s*\[[^\]]+\]:\s*(\S+)", re.MULTILINE)
FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`[^`\n]*`")
SUBCOMMAND = re.compile(r"add_subcommand\(\s*\"([\w-]+)\"")


def tracked():
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked tree is unknown")
    return [p for p in out.decode().split("\0") if p]


def text_of(path):
    """The file's text, or None for binary files, large data and files git lists but the tree lacks."""
    p = ROOT / path
    if not p.is_file() or p.stat().st_size > MAX_BYTES:
        return None
    raw = p.read_bytes()
    if b"\0" in raw:
        return None
    return raw.decode("utf-8", errors="replace")


def prose_files():
    return [p for p in tracked() if not p.startswith(RECORDS + NOT_TEXT)]


def test_no_work_log_labels_machine_paths_or_registry_hosts():
    found = []
    for path in prose_files():
        text = text_of(path)
        if text is None:
            continue
        for lineno, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith(("#include", "#pragma", "#define", "#if", "#endif", "#else")):
                continue
            for what, pattern in LABELS.items():
                m = pattern.search(line)
                if m:
                    found.append(f"{path}:{lineno}: {what}: {m.group(0)!r}")
    assert not found, "say what, when and why instead:\n" + "\n".join(found)


def slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped, spaces to '-'."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(text):
    seen, out = {}, set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", text), re.MULTILINE):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links(text):
    body = CODE_SPAN.sub("", FENCE.sub("", text))
    return LINK.findall(body) + REFERENCE_LINK.findall(body)


def normalise(path):
    """a/b/../c -> a/c, ./a -> a, without the file system; None outside the repository."""
    parts = []
    for part in path.split("/"):
        if part == "..":
            if not parts:
                return None
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    return "/".join(parts)


def test_relative_links_resolve():
    files = tracked()
    known = set(files)
    folders = {str(Path(p).parent) for p in files}
    folders |= {str(parent) for p in folders for parent in Path(p).parents}
    broken = []
    for md in (p for p in prose_files() if p.endswith(".md")):
        text = text_of(md) or ""
        for target in links(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # http:, https:, mailto:
            path, _, anchor = target.partition("#")
            resolved = md if not path else normalise(f"{Path(md).parent}/{path}")
            if resolved not in known and resolved not in folders:
                broken.append(f"{md}: ({target}): no tracked file or folder {resolved}")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(text_of(resolved) or ""):
                broken.append(f"{md}: ({target}): {resolved} has no heading #{anchor}")
    assert not broken, "\n".join(broken)


def test_cli_reference_names_every_subcommand():
    registered = set()
    for path in (ROOT / "src" / "cli").glob("*.cpp"):
        registered |= set(SUBCOMMAND.findall(path.read_text()))
    doc = (ROOT / "docs" / "cli.md").read_text()
    missing = sorted(name for name in registered if not re.search(rf"`(eval )?{re.escape(name)}\b", doc))
    assert registered and not missing, f"docs/cli.md does not name: {missing}"
