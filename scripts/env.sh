# Sourced by the scripts: where the project's Python environment lives (made by scripts/setup.sh).
LINEAR_ARD_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export LINEAR_ARD_VENV="${LINEAR_ARD_VENV:-$LINEAR_ARD_ROOT/.venv}"
export LINEAR_ARD_PYTHON="$LINEAR_ARD_VENV/bin/python"
