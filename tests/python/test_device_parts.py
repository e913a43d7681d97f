"""dev/gpu/device_parts.sh: a file split into parts here, carried over separate "calls" (a fresh
working-tree folder each) and joined in a store on the other side, checked against its SHA-256."""
import os
import shutil
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "dev" / "gpu" / "device_parts.sh"


def parts(*args):
    return subprocess.run(["bash", str(SCRIPT), *map(str, args)], capture_output=True, text=True)


def call_with(tmp_path, k, files):
    """A call's working tree carrying FILES only: joins into the store, returns the CompletedProcess."""
    tree = tmp_path / f"call{k}"
    tree.mkdir()
    for f in files:
        shutil.copy(f, tree)
    return parts("join", tree, tmp_path / "store")


def split_random(tmp_path, size):
    data = os.urandom(size)
    src = tmp_path / "data.tar.xz"
    src.write_bytes(data)
    r = parts("split", src, tmp_path / "packed", 1)
    assert r.returncode == 0, r.stderr
    return data, sorted((tmp_path / "packed").glob("data.tar.xz.part-*")), tmp_path / "packed" / "data.tar.xz.sha256"


def test_parts_over_calls_join_to_the_same_bytes(tmp_path):
    data, pieces, sha = split_random(tmp_path, 2 * 1024 * 1024 + 12345)  # 3 parts of 1 MiB at most
    assert len(pieces) == 3 and sha.read_text().split()[1] == "3"
    first = call_with(tmp_path, 0, [pieces[0], sha])
    assert first.returncode == 3 and "part-01" in first.stderr and "part-02" in first.stderr
    assert call_with(tmp_path, 1, [pieces[1]]).returncode == 3
    last = call_with(tmp_path, 2, [pieces[2]])
    assert last.returncode == 0, last.stderr
    joined = Path(last.stdout.split()[-1])
    assert joined.read_bytes() == data
    assert not list((tmp_path / "store").glob("*.part-*"))
    again = call_with(tmp_path, 3, [])  # a later call finds the joined file
    assert again.returncode == 0 and again.stdout.split()[-1] == str(joined)


def test_a_corrupt_part_is_refused_and_removed(tmp_path):
    _, pieces, sha = split_random(tmp_path, 1024 * 1024 + 7)
    bad = bytearray(pieces[1].read_bytes())
    bad[3] ^= 0xFF
    pieces[1].write_bytes(bytes(bad))
    call_with(tmp_path, 0, [pieces[0], sha])
    r = call_with(tmp_path, 1, [pieces[1]])
    assert r.returncode == 3 and "SHA-256" in r.stderr
    store = tmp_path / "store"
    assert not list(store.glob("*.part-*")) and not (store / "data.tar.xz").exists()


def test_usage_errors_name_the_command(tmp_path):
    r = parts("copy", tmp_path)
    assert r.returncode == 2 and "usage" in r.stderr
