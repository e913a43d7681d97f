"""lm-evaluation-harness's command line with the `linear-ard` model registered:

    python -m linear_ard.lm_eval_cli --model linear-ard --model_args pretrained=DIR --tasks a,b [lm-eval flags]

takes every flag `lm_eval` takes (--include_path, --num_fewshot, --limit, --output_path,
--log_samples, ...) and writes what it writes. `linear-ard eval tasks MODEL --tasks NAMES` runs it.
An error is one line on stderr (exit 1) rather than a traceback.
"""

import sys


def main(argv=None):
    from . import lm_eval_model  # noqa: F401  (registers the model)
    from lm_eval.__main__ import cli_evaluate

    sys.argv = ["lm_eval", *(sys.argv[1:] if argv is None else argv)]
    try:
        cli_evaluate()
    except Exception as e:  # noqa: BLE001 (one line for any failure inside lm-eval or the engine)
        lines = str(e).strip().splitlines() or [""]
        print(f"linear-ard: error: {type(e).__name__}: {lines[0]}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
