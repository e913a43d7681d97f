"""Hub names: a model argument `org/name[@revision]` resolves, offline, to the snapshot folder of
the local Hugging Face cache; checked against huggingface_hub's own resolver
(snapshot_download(local_files_only=True)) on a cache tree built here in the layout it writes
(blobs, refs/<revision>, snapshots/<commit>/ of symlinks), with models/demo as the model. The cache
is found through HF_HUB_CACHE or HF_HOME; a local folder of the same name wins; a name that is not
cached fails with one line naming where it looked and the `hf download` command.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_model_path.py
"""

import hashlib
import os
import shutil
import subprocess

import pytest

from test_eval import binary

from real_model import ROOT

huggingface_hub = pytest.importorskip("huggingface_hub")
DEMO = ROOT / "models" / "demo"
MAIN, OTHER = "a" * 39 + "1", "b" * 39 + "2"


def cache_add(cache, repo_id, commit, ref=None):
    """models/demo as `repo_id` at `commit`, the way huggingface_hub stores a download."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir(exist_ok=True)
    for f in DEMO.iterdir():
        blob = repo / "blobs" / hashlib.sha256(f.read_bytes()).hexdigest()
        if not blob.exists():
            shutil.copyfile(f, blob)
        (snapshot / f.name).symlink_to(os.path.relpath(blob, snapshot))
    if ref:
        (repo / "refs").mkdir(exist_ok=True)
        (repo / "refs" / ref).write_text(commit)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    cache = tmp_path_factory.mktemp("hf") / "hub"
    cache_add(cache, "TinyOrg/Demo-1", MAIN, "main")
    cache_add(cache, "TinyOrg/Demo-1", OTHER, "v2")
    return cache


def inspect(name, cwd, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "HUGGINGFACE_"))}
    return subprocess.run([str(binary()), "inspect", name], capture_output=True, text=True, cwd=cwd,
                          env={**clean, **env}, timeout=60)


def folder_of(r):
    assert r.returncode == 0, r.stdout + r.stderr
    return [line.split(": ", 1)[1] for line in r.stdout.splitlines() if line.startswith("folder: ")][0]


@pytest.mark.parametrize("name,revision", [("TinyOrg/Demo-1", None), ("TinyOrg/Demo-1@v2", "v2"),
                                           (f"TinyOrg/Demo-1@{OTHER}", OTHER)])
def test_resolves_as_huggingface_hub_does(cache, tmp_path, name, revision):
    theirs = huggingface_hub.snapshot_download("TinyOrg/Demo-1", revision=revision, cache_dir=str(cache),
                                               local_files_only=True)
    assert folder_of(inspect(name, tmp_path, HF_HUB_CACHE=str(cache))) == theirs


def test_hf_home_and_local_folder_first(cache, tmp_path):
    assert folder_of(inspect("TinyOrg/Demo-1", tmp_path, HF_HOME=str(cache.parent))).endswith(MAIN)
    (tmp_path / "TinyOrg").mkdir()
    shutil.copytree(DEMO, tmp_path / "TinyOrg" / "Demo-1")
    r = inspect("TinyOrg/Demo-1", tmp_path, HF_HUB_CACHE=str(cache))
    assert r.returncode == 0 and "folder: " not in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("name,where,command", [
    ("TinyOrg/Missing", "models--TinyOrg--Missing/refs/main", "hf download TinyOrg/Missing"),
    ("TinyOrg/Demo-1@v3", "models--TinyOrg--Demo-1/refs/v3", "hf download TinyOrg/Demo-1 --revision v3"),
    (f"TinyOrg/Demo-1@{'c' * 40}", "snapshots/" + "c" * 40, "hf download TinyOrg/Demo-1 --revision " + "c" * 40),
])
def test_not_cached_is_one_line_with_the_download_command(cache, tmp_path, name, where, command):
    r = inspect(name, tmp_path, HF_HUB_CACHE=str(cache))
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) <= 2 and where in r.stderr and r.stderr.rstrip().endswith(command), r.stderr


def test_eval_and_restore_take_hub_names(cache, tmp_path):
    env = {**os.environ, "HF_HUB_CACHE": str(cache)}
    text = ROOT / "data" / "demo" / "heldout.jsonl"
    r = subprocess.run([str(binary()), "eval", "ppl", "TinyOrg/Demo-1", "--text", str(text), "--ctx", "64",
                        "--device", "cpu", "--quiet"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    r = subprocess.run([str(binary()), "restore", str(ROOT / "configs" / "demo_cpu.yaml"), "teacher=TinyOrg/Nope",
                        f"output={tmp_path / 'o'}", "device=cpu"], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 1 and "config key 'teacher'" in r.stderr and "hf download TinyOrg/Nope" in r.stderr
