"""dev/gpu/device_data.sh: the carried data split unpacked once into a folder: the files as packed,
a second call leaves the folder alone, an archive that is not the split is an error naming it and
leaves no folder behind."""
import os
import subprocess
import tarfile
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "dev" / "gpu" / "device_data.sh"


def unpack(archive, folder):
    return subprocess.run(["bash", str(SCRIPT), str(folder)], capture_output=True, text=True,
                          env={**os.environ, "DATA": str(archive)})


def packed(tmp_path, names):
    src = tmp_path / "src"
    src.mkdir()
    contents = {n: os.urandom(64).hex() for n in names}
    for n, text in contents.items():
        (src / n).write_text(text)
    archive = tmp_path / "data.tar.xz"
    with tarfile.open(archive, "w:xz") as tar:
        for n in names:
            tar.add(src / n, arcname=f"./{n}")
    return archive, contents


def test_unpacks_once(tmp_path):
    archive, contents = packed(tmp_path, ["train.jsonl", "val.jsonl", "test.jsonl"])
    folder = tmp_path / "data"
    r = unpack(archive, folder)
    assert r.returncode == 0 and r.stdout.strip() == str(folder), r.stderr
    assert {p.name: p.read_text() for p in folder.iterdir()} == contents
    (folder / "train.jsonl").write_text("kept")
    archive.unlink()
    r = unpack(archive, folder)
    assert r.returncode == 0 and (folder / "train.jsonl").read_text() == "kept"


def test_a_bad_archive_is_named(tmp_path):
    archive, _ = packed(tmp_path, ["train.jsonl"])  # no val.jsonl: not a split
    for bad in (archive, tmp_path / "missing.tar.xz"):
        r = unpack(bad, tmp_path / "data")
        assert r.returncode == 1 and str(bad) in r.stderr, r.stderr
        assert not (tmp_path / "data").exists()
