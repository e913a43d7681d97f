"""Installing: `cmake --install` of the build into a temporary prefix gives a working binary,
libraries, headers, the scripts the binary runs and the Python package with no source tree or build
folder involved (the binary runs from the prefix and finds its libraries there; `import linear_ard`
from the prefix's site-packages loads the prefix's op library and computes the KL the dense
reference gives); the version is the one CMakeLists.txt and pyproject.toml state.

`pip install .` itself runs with LINEAR_ARD_TEST_PIP=1 (a build of the op library and the command
line; CPU kernels): it installs into a temporary --target folder, imports from there, and runs the
installed `linear-ard` entry point and the Python API with no build folder in sight; the installed
binary finds libtorch through its `$ORIGIN/../../torch/lib` RPATH (torch beside the package, as in
a site-packages). Its CMake build folder is the source tree's `build-pip/` (pyproject.toml), so a
second run rebuilds only what changed, and the compiler goes through ccache when it is installed.

    LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_install.py
    LINEAR_ARD_TEST_PIP=1 LINEAR_ARD_BUILD_DIR=$PWD/build pytest -q tests/python/test_install.py -k pip
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT_VERSION = re.search(r"project\(linear_ard VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)

# Run in a clean folder with no path to the source tree: the import must come from `site`.
IMPORT_CHECK = """
import sys, torch
import linear_ard
sys.path.insert(0, sys.argv[1])
from relation_kl_dense import relation_kl_dense
torch.manual_seed(0)
x_s, x_t = torch.randn(1, 2, 9, 8, dtype=torch.float64), torch.randn(1, 2, 9, 8, dtype=torch.float64)
kl, _, _ = linear_ard.relation_kl(x_s, None, x_t, None, causal=True)
ref = relation_kl_dense(x_s, x_s, x_t, x_t, causal=True)[0]
assert torch.allclose(kl, ref, atol=1e-10), (kl - ref).abs().max()
print(linear_ard.__file__)
print(sorted(torch.ops.loaded_libraries))
"""


def build_dir():
    build = os.environ.get("LINEAR_ARD_BUILD_DIR")
    if not build:
        pytest.skip("LINEAR_ARD_BUILD_DIR is not set (scripts/test.sh sets it)")
    return Path(build)


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if k not in ("LINEAR_ARD_BUILD_DIR", "LINEAR_ARD_LIBRARY", "PYTHONPATH", "LD_LIBRARY_PATH")}
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    build = build_dir()
    prefix = tmp_path_factory.mktemp("prefix")
    r = subprocess.run(["cmake", "--install", str(build), "--prefix", str(prefix)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


def site_packages(prefix):
    return prefix / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def test_prefix_layout(prefix):
    for path in ("bin/linear-ard", "lib/liblinear_ard_ops.so", "lib/liblinear_ard_model.so",
                 "include/linear_ard/ops/relation_kl.h", "include/linear_ard/core/relation_kl.h",
                 "share/linear-ard/plot.py", "share/linear-ard/export_gguf.py",
                 "share/linear-ard/tensorboard_follow.py"):
        assert (prefix / path).is_file(), path
    assert (site_packages(prefix) / "linear_ard" / "__init__.py").is_file()
    assert not list(site_packages(prefix).rglob("__pycache__"))


def test_installed_binary_runs_from_the_prefix(prefix, tmp_path):
    binary = prefix / "bin" / "linear-ard"
    r = subprocess.run([str(binary), "--version"], capture_output=True, text=True, cwd=tmp_path, env=clean_env())
    assert r.returncode == 0 and r.stdout.strip() == f"linear-ard {PROJECT_VERSION}", r.stdout + r.stderr
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True)
    model_lib = [line.split("=>")[1].split(" (")[0].strip() for line in r.stdout.splitlines()
                 if "liblinear_ard_model.so" in line]
    assert model_lib and Path(model_lib[0]).resolve() == (prefix / "lib" / "liblinear_ard_model.so").resolve(), r.stdout
    r = subprocess.run([str(binary), "inspect", str(ROOT / "models" / "demo")], capture_output=True, text=True,
                       cwd=tmp_path, env=clean_env())
    assert r.returncode == 0 and "LlamaForCausalLM" in r.stdout and "(3.67 M;" in r.stdout, r.stdout + r.stderr


def test_import_from_the_prefix(prefix, tmp_path):
    r = subprocess.run([sys.executable, "-c", IMPORT_CHECK, str(Path(__file__).resolve().parent)],
                       capture_output=True, text=True, cwd=tmp_path,
                       env=clean_env(PYTHONPATH=str(site_packages(prefix))))
    assert r.returncode == 0, r.stderr
    package, libraries = r.stdout.splitlines()[-2:]
    assert package == str(site_packages(prefix) / "linear_ard" / "__init__.py")
    assert str(prefix / "lib" / "liblinear_ard_ops.so") in libraries


def test_versions_agree():
    pyproject = (ROOT / "pyproject.toml").read_text()
    regex = re.search(r"regex = '(.+)'", pyproject).group(1)
    assert re.search(regex, (ROOT / "CMakeLists.txt").read_text()).group("value") == PROJECT_VERSION


# The Python API from the installed package alone: it finds the binary inside the package.
API_CHECK = """
import sys
import linear_ard
from linear_ard._binary import binary
print(binary())
report = linear_ard.evaluate(sys.argv[1], "ppl", text=sys.argv[2], ctx=[64], device="cpu")
print(report["results"][0]["ppl"])
"""


def library_paths(binary, env):
    """{library name: the path the dynamic loader takes it from} for `binary`, as ldd reports."""
    r = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    paths = {}
    for line in r.stdout.splitlines():
        if "=>" in line:
            name, rest = line.split("=>", 1)
            paths[name.strip()] = rest.split(" (")[0].strip()
    return paths


@pytest.fixture(scope="module")
def pip_target(tmp_path_factory):
    if os.environ.get("LINEAR_ARD_TEST_PIP") != "1":
        pytest.skip("builds the op library and the command line: set LINEAR_ARD_TEST_PIP=1")
    target = tmp_path_factory.mktemp("pip") / "site"
    # CPU kernels only: a CUDA build of the kernels takes far longer and is the same install path.
    settings = ["--config-settings=cmake.define.LINEAR_ARD_WITH_CUDA=OFF"]
    if shutil.which("ccache"):
        settings.append("--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), *settings,
                        str(ROOT)], capture_output=True, text=True, env=clean_env(), timeout=3600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    # torch beside the package, as a site-packages holds them (the --target folder has no torch).
    import torch
    (target / "torch").symlink_to(Path(torch.__file__).parent)
    return target


def test_pip_install_builds_and_imports(pip_target, tmp_path):
    target = pip_target
    assert (target / "linear_ard" / "liblinear_ard_ops.so").is_file()
    assert list(target.glob(f"linear_ard-{PROJECT_VERSION}.dist-info"))
    r = subprocess.run([sys.executable, "-c", IMPORT_CHECK, str(Path(__file__).resolve().parent)],
                       capture_output=True, text=True, cwd=tmp_path, env=clean_env(PYTHONPATH=str(target)))
    assert r.returncode == 0, r.stderr
    assert str(target / "linear_ard" / "liblinear_ard_ops.so") in r.stdout.splitlines()[-1]


def test_pip_installed_command_finds_its_libraries(pip_target, tmp_path):
    target = pip_target
    env = clean_env(PYTHONPATH=str(target))
    binary = target / "linear_ard" / "bin" / "linear-ard"
    for script in ("plot.py", "export_gguf.py", "tensorboard_follow.py"):
        assert (target / "linear_ard" / "share" / "linear-ard" / script).is_file(), script
    paths = library_paths(binary, env)
    assert os.path.normpath(paths["liblinear_ard_model.so"]) == str(target / "linear_ard" / "liblinear_ard_model.so")
    assert os.path.normpath(paths["libtorch_cpu.so"]) == str(target / "torch" / "lib" / "libtorch_cpu.so"), paths
    # The entry point pip wrote (on PATH in a real environment) runs that binary.
    r = subprocess.run([str(target / "bin" / "linear-ard"), "--version"], capture_output=True, text=True,
                       cwd=tmp_path, env=env)
    assert r.returncode == 0 and r.stdout.strip() == f"linear-ard {PROJECT_VERSION}", r.stdout + r.stderr
    r = subprocess.run([str(target / "bin" / "linear-ard"), "inspect", str(ROOT / "models" / "demo")],
                       capture_output=True, text=True, cwd=tmp_path, env=env)
    assert r.returncode == 0 and "LlamaForCausalLM" in r.stdout, r.stdout + r.stderr


def test_pip_installed_python_api_runs_the_installed_binary(pip_target, tmp_path):
    env = clean_env(PYTHONPATH=str(pip_target))
    env.pop("LINEAR_ARD_BINARY", None)
    r = subprocess.run([sys.executable, "-c", API_CHECK, str(ROOT / "models" / "demo"),
                        str(ROOT / "data" / "demo" / "heldout.jsonl")], capture_output=True, text=True, cwd=tmp_path,
                       env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    used, ppl = r.stdout.splitlines()[-2:]
    assert used == str(pip_target / "linear_ard" / "bin" / "linear-ard") and float(ppl) > 1
