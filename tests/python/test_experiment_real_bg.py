"""experiments/experiment_real_bg.sh: a driver started in its own session outlives the call that
started it, and each `wait` collects what it has written so far, a run's `.running` marker only while
the run is going on."""
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# A stand-in for experiments/transfer.sh: one run that holds its .running marker until "go" appears.
DRIVER = """#!/usr/bin/env bash
set -u
mkdir -p "$EXPERIMENT_DIR/logs" "$EXPERIMENT_DIR/runs/r1"
touch "$EXPERIMENT_DIR/logs/r1.running"; echo "r1 started" >"$EXPERIMENT_DIR/logs/r1.log"
while [[ ! -f "$EXPERIMENT_DIR/go" ]]; do sleep 0.2; done
echo '{"step": 3}' >"$EXPERIMENT_DIR/runs/r1/training_summary.json"
echo "driver saw $1 and MARK=$MARK"
rm "$EXPERIMENT_DIR/logs/r1.running"
exit 7
"""


def bg(tree, env, *args):
    return subprocess.run(["bash", str(tree / "experiments" / "experiment_real_bg.sh"), *args],
                          capture_output=True, text=True, env=env, timeout=60)


def collected(out):
    with tarfile.open(out / "bg" / "real.tgz") as t:
        return {os.path.normpath(n) for n in t.getnames() if not n.endswith("/")}


def setup(tmp_path):
    """A small repository copy (the script copies its whole root per driver) with the stand-in."""
    tree = tmp_path / "repo"
    (tree / "experiments").mkdir(parents=True)
    shutil.copy(ROOT / "experiments" / "experiment_real_bg.sh", tree / "experiments")
    (tree / "experiments" / "fake.sh").write_text(DRIVER)
    (tree / "experiments" / "fake.sh").chmod(0o755)
    env = dict(os.environ, LARD_DIR=str(tmp_path / "lard"), EXPERIMENT_DIR=str(tmp_path / "E"),
               OUT=str(tmp_path / "out"), DRIVER="experiments/fake.sh")
    return tree, env


def test_wait_collects_while_running_and_drops_an_ended_runs_marker(tmp_path):
    tree, env = setup(tmp_path)
    r = bg(tree, env, "start", "t", "MARK=x", "--", "runs")
    assert r.returncode == 0 and "started t" in r.stdout, r.stderr
    for _ in range(100):  # the driver writes its marker
        if (tmp_path / "E" / "logs" / "r1.running").exists():
            break
        time.sleep(0.1)
    first = bg(tree, env, "wait", "1")
    assert "(exit: running)" in first.stdout
    assert "logs/r1.running" in collected(tmp_path / "out")
    assert bg(tree, env, "start", "t", "--", "runs").returncode == 1  # one driver of a name at a time

    (tmp_path / "E" / "go").touch()
    second = bg(tree, env, "wait", "30")
    assert "(exit: 7)" in second.stdout and "driver saw runs and MARK=x" in second.stdout
    files = collected(tmp_path / "out")
    assert "logs/r1.log" in files and "runs/r1/training_summary.json" in files
    assert "logs/r1.running" not in files


def test_usage_errors_name_the_form(tmp_path):
    tree, env = setup(tmp_path)
    r = bg(tree, env, "start", "t", "runs")
    assert r.returncode == 2 and "start NAME [VAR=VALUE ...] -- PHASE" in r.stderr
    r = bg(tree, env, "later")
    assert r.returncode == 2 and "usage:" in r.stderr
