"""Data files end to end through the `linear-ard` binary: one reading rule for `eval ppl`, `restore`
and `pretrain` (the same documents as .jsonl, a .json array of objects or of strings, under another
`field`, nested), and clean errors naming file, line and field for empty, too short and malformed
text. docs/reliability.md lists the cases.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_data_files.py
"""

import json
import random
import shlex
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tiny_teacher  # noqa: E402
from test_restore import binary, restore  # noqa: E402

CTX = 32
WORDS = "the model restores relation attention query key value rope scaled student teacher".split()


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("data_files")
    rng = random.Random(3)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 40))) + "." for _ in range(40)]
    teacher = tiny_teacher.teacher_make(root / "teacher", texts, hidden=32, intermediate=64, layers=2,
                                        heads=4, kv_heads=2, max_positions=CTX, vocab_size=300,
                                        qk_std=0.15, seed=0)
    return root, teacher, texts


def ppl(model, text, *args, out=None):
    cmd = [str(binary()), "eval", "ppl", str(model), "--text", str(text), "--device", "cpu", "--dtype", "fp32",
           *map(str, args)]
    if out:
        cmd += ["-o", str(out)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def ppl_rows(model, text, *args, out):
    r = ppl(model, text, "--ctx", 16, CTX, *args, out=out)
    assert r.returncode == 0, r.stdout + r.stderr
    rows = json.loads(Path(str(out) + ".json").read_text())["results"]
    return [{k: row[k] for k in ("ctx_len", "documents", "windows", "tokens", "bytes", "nll")} for row in rows]


def restore_config(root, teacher, name, data, **more):
    config = root / f"{name}.yaml"
    config.write_text(yaml.safe_dump({
        "teacher": str(teacher), "student_rope": {"rope_type": "linear", "factor": 4}, "data": data,
        "ctx_len": CTX, "steps": 2, "lr": 1e-3, "device": "cpu", "dtype": "fp32", "log_every": 10,
        "output": str(root / name), **more}))
    return config


def losses(out):
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    summary = json.loads((out / "training_summary.json").read_text())
    # The validation's memory figures are the process's own, not the data's.
    before = {k: v for k, v in summary["eval_before"].items() if k not in ("memory_bytes", "memory_reserved_bytes")}
    return [(r["step"], r["loss"]) for r in records if not r.get("eval")], before


def same_documents(root, texts):
    """The same documents in every form the reader takes, with the options that select their text."""
    forms = {"jsonl": (root / "docs.jsonl", None)}
    tiny_teacher.data_write(forms["jsonl"][0], texts)
    (root / "objects.json").write_text(json.dumps([{"id": i, "text": t} for i, t in enumerate(texts)], indent=1))
    forms["json_objects"] = (root / "objects.json", None)
    (root / "strings.json").write_text("\ufeff" + json.dumps(texts), encoding="utf-8")  # with a BOM
    forms["json_strings"] = (root / "strings.json", None)
    (root / "lines.json").write_text("".join(json.dumps({"text": t}) + "\r\n\r\n" for t in texts))
    forms["json_lines_crlf"] = (root / "lines.json", None)
    (root / "content.jsonl").write_text("".join(json.dumps({"content": t, "n": 1}) + "\n" for t in texts))
    forms["field"] = (root / "content.jsonl", "content")
    (root / "nested.jsonl").write_text("".join(json.dumps({"meta": {"body": t}}) + "\n" for t in texts))
    forms["nested_field"] = (root / "nested.jsonl", "meta.body")
    return forms


def test_every_form_of_the_same_documents_scores_the_same(setup):
    root, teacher, texts = setup
    forms = same_documents(root, texts[:6])
    rows = {}
    for name, (path, field) in forms.items():
        args = ["--text-field", field] if field else []
        rows[name] = ppl_rows(teacher, path, *args, out=root / f"ppl_{name}")
    for name in forms:
        assert rows[name] == rows["jsonl"], name  # was: a .json array scored as one plain-text document
    assert rows["jsonl"][0]["documents"] == 6


def test_restore_reads_every_form_alike(setup):
    root, teacher, texts = setup
    forms = same_documents(root / "restore_forms", texts)
    runs = {}
    for name in ("jsonl", "json_objects", "json_strings", "field", "nested_field"):
        path, field = forms[name]
        entry = {"path": str(path), "field": field} if field else str(path)
        config = restore_config(root, teacher, f"restore_{name}", [entry])
        r = restore(config)
        assert r.returncode == 0, r.stdout + r.stderr
        runs[name] = losses(root / f"restore_{name}")
        resolved = yaml.safe_load((root / f"restore_{name}" / "resolved_config.yaml").read_text())
        assert resolved["data"] == [entry]
    for name in runs:
        assert runs[name] == runs["jsonl"], name  # was: a .json array refused (read as JSON Lines)
    # The override spelling of a per-file field.
    config = restore_config(root, teacher, "restore_override", [str(forms["jsonl"][0])])
    r = restore(config, f"data=[{{path: {forms['field'][0]}, field: content}}]", "overwrite=true")
    assert r.returncode == 0, r.stdout + r.stderr
    assert losses(root / "restore_override") == runs["jsonl"]


def test_data_entry_keys_are_checked(setup, tmp_path):
    root, teacher, texts = setup
    good = tmp_path / "good.jsonl"
    tiny_teacher.data_write(good, texts)
    for entry, message in (({"path": str(good), "feild": "x"}, "unknown config key 'data[0].feild'"),
                           ({"field": "content"}, "config key 'data[0].path' is required"),
                           ({"path": str(good), "field": ""}, "config key 'data[0].field' must not be empty")):
        out = tmp_path / "out"
        r = restore(restore_config(tmp_path, teacher, "out", [entry]))
        assert r.returncode == 1 and message in r.stderr, r.stderr
        assert not out.exists()


# ---- errors: (file name, bytes, extra eval args, message after "<path>" in stderr)
EMPTY_OR_SHORT = {
    "empty_txt": ("empty.txt", b"", [], ": holds no text"),
    "whitespace_txt": ("blank.txt", b"\n \r\n\t\n", [], ": holds no text"),
    "blank_lines_jsonl": ("blank.jsonl", b"\n\r\n  \n", [], ": holds no record"),
    "empty_array": ("empty.json", b"[]", [], ": holds no record"),
    "empty_documents": ("empty_docs.jsonl", b'{"text": ""}\n{"text": ""}\n', [], ": no token to score"),
    "shorter_than_a_window": ("short.txt", b"the model", ["--ctx", 16], ": 1 document(s) give 4 token(s) after tokenization, fewer than one window of ctx 16"),
}


@pytest.mark.parametrize("case", sorted(EMPTY_OR_SHORT))
def test_eval_on_empty_or_too_short_text_is_an_error(setup, tmp_path, case):
    _, teacher, _ = setup
    name, data, args, message = EMPTY_OR_SHORT[case]
    path = tmp_path / name
    path.write_bytes(data)
    out = tmp_path / "ppl"
    r = ppl(teacher, path, *(args or ["--ctx", 8]), out=out)
    assert r.returncode == 1, r.stdout + r.stderr  # was: "perplexity 0.0", exit 0
    assert f"{path}{message}" in r.stderr, r.stderr
    assert not Path(str(out) + ".json").exists() and not Path(str(out) + ".md").exists()


def test_eval_warns_when_no_document_fills_a_window(setup, tmp_path):
    _, teacher, texts = setup
    path = tmp_path / "short_docs.jsonl"
    tiny_teacher.data_write(path, [" ".join(t.split()[:4]) for t in texts])
    r = ppl(teacher, path, "--ctx", CTX, out=tmp_path / "ppl")
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"linear-ard: warning: {path}: no document fills a window of ctx {CTX}" in r.stderr, r.stderr


BAD = {
    "invalid_utf8_txt": ("bad.txt", b"good line\nbad \xff byte\n", "bad.txt:2: invalid UTF-8 (byte 0xFF) at byte 14 of the file, column 5"),
    "invalid_utf8_jsonl": ("bad.jsonl", b'{"text": "ok"}\n{"text": "\xc3("}\n', "bad.jsonl:2: invalid UTF-8 (byte 0xC3)"),
    "utf16": ("utf16.txt", "text".encode("utf-16"), "utf16.txt: is UTF-16"),
    "not_json": ("not_json.jsonl", b'{"text": "ok"}\n\n{"text": \n', "not_json.jsonl:3: not valid JSON at column"),
    "missing_field": ("no_field.jsonl", b'{"text": "a"}\n{"body": "b", "id": 1}\n', "no_field.jsonl:2: no field 'text' (the record's keys: body, id"),
    "not_a_string": ("number.jsonl", b'{"text": 5}\n', "number.jsonl:1: field 'text' is number, not a string"),
    "array_element": ("array.json", b'[{"text": "a"}, {"txt": "b"}]', "array.json: element [1]: no field 'text'"),
    "parquet": ("data.parquet", b"PAR1", "data.parquet: Parquet is not read"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_malformed_text_names_file_line_and_field_in_eval(setup, tmp_path, case):
    _, teacher, _ = setup
    name, data, message = BAD[case]
    (tmp_path / name).write_bytes(data)
    r = ppl(teacher, tmp_path / name, "--ctx", 8, out=tmp_path / "ppl")
    assert r.returncode == 1, r.stdout + r.stderr
    assert f"{tmp_path}/{message}" in r.stderr, r.stderr  # was: no file named (UTF-8), no field named


@pytest.mark.parametrize("case", sorted(BAD) + ["empty_file", "blank_lines"])
def test_malformed_or_empty_data_file_stops_restore_before_the_output_folder(setup, tmp_path, case):
    """The bad file comes second in `data`: every file is checked before training, wherever it is."""
    root, teacher, texts = setup
    name, data, message = BAD.get(case) or {"empty_file": ("empty.jsonl", b"", "empty.jsonl: holds no record"),
                                            "blank_lines": ("blank.txt", b"\n\n", "blank.txt: holds no text")}[case]
    good = tmp_path / "good.jsonl"
    tiny_teacher.data_write(good, texts)
    (tmp_path / name).write_bytes(data)
    out = tmp_path / "out"
    r = restore(restore_config(tmp_path, teacher, "out", [str(good), str(tmp_path / name)]))
    assert r.returncode == 1, r.stdout + r.stderr  # was: an empty file skipped, a bad one found mid-run
    assert f"{tmp_path}/{message}" in r.stderr, r.stderr
    assert not out.exists()


def test_pretrain_data_is_read_by_the_same_reader(setup, tmp_path):
    root, teacher, texts = setup
    good = tmp_path / "good.jsonl"
    tiny_teacher.data_write(good, texts)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"text": "a"}\n{"content": "b"}\n')
    config = tmp_path / "pretrain.yaml"
    config.write_text(yaml.safe_dump({
        "pretrain": {"model": str(teacher / "config.json"), "tokenizer": str(teacher)},
        "data": [str(good), str(bad)], "ctx_len": CTX, "steps": 1, "device": "cpu", "dtype": "fp32",
        "output": str(tmp_path / "out")}))
    r = subprocess.run([str(binary()), "pretrain", str(config)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and f"{bad}:2: no field 'text'" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_parquet_error_gives_a_working_conversion(setup, tmp_path):
    _, teacher, texts = setup
    docs = texts[:5]
    table = pa.table({"id": list(range(len(docs))), "text": docs})
    pq.write_table(table, tmp_path / "data.parquet")
    r = ppl(teacher, tmp_path / "data.parquet", "--ctx", 16)
    assert r.returncode == 1 and "pyarrow" in r.stderr, r.stderr
    command = next(line.strip() for line in r.stderr.splitlines() if line.strip().startswith("python3 -c"))
    # The command as printed, with this interpreter (the one that has pyarrow) for `python3`.
    subprocess.run(shlex.quote(sys.executable) + command[len("python3"):], shell=True, check=True, cwd=tmp_path)
    tiny_teacher.data_write(tmp_path / "reference.jsonl", docs)
    assert (ppl_rows(teacher, tmp_path / "data.jsonl", out=tmp_path / "converted")
            == ppl_rows(teacher, tmp_path / "reference.jsonl", out=tmp_path / "reference"))
