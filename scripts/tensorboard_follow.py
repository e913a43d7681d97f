#!/usr/bin/env python3
"""TensorBoard event files of a restore / pretrain run, written while it runs: follows
OUT/metrics.jsonl and writes each record as scalars into OUT/tensorboard/ through
torch.utils.tensorboard's SummaryWriter (the `tensorboard` package's event format), so that
`tensorboard --logdir OUT` shows the run live.

    scripts/tensorboard_follow.py OUT [--since UNIX_SECONDS]

`linear-ard restore|pretrain` start it beside the run (config key `tensorboard: false` or
LINEAR_ARD_NO_TENSORBOARD=1 turn it off) and close its standard input when the run ends: it then
reads what is left, closes the event file and exits. Run by hand on a finished run, with stdin
closed (`< /dev/null`), it converts metrics.jsonl once.

Tags: training lines as `stage<N>/<key>` (stage 1 optimises the relation loss, stage 2 the LM loss:
each stage gets its own curves), held-out lines as `eval/<key>`, at the record's global step.
metrics.jsonl is the source: a metrics.jsonl written before --since (a previous run's, in a folder
the run may refuse) is not followed, and one that is replaced or shortened (a resumed or overwritten
run rewrites it) starts the event files over.
"""

import argparse
import json
import math
import os
import select
import sys
import time
from pathlib import Path

POLL_S = 1.0
# A file's modification time lags the system clock by up to a timer tick.
CLOCK_SLACK_S = 1.0


def record_scalars(record):
    """(tag, value) of one metrics.jsonl record's numbers."""
    if record.get("eval"):
        prefix = "eval"
    else:
        prefix = f"stage{record.get('stage', 1)}"
    for key, value in record.items():
        if key in ("step", "stage", "eval") or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if math.isfinite(value):
            yield f"{prefix}/{key}", value


class Follower:
    """Reads complete lines of metrics.jsonl past the last one read, into a SummaryWriter."""

    def __init__(self, out, since):
        self.metrics = Path(out) / "metrics.jsonl"
        self.logdir = Path(out) / "tensorboard"
        self.since = since
        self.writer = None
        self.identity = None  # (device, inode) of the file being followed
        self.offset = 0

    def _restart(self, identity):
        from torch.utils.tensorboard import SummaryWriter

        if self.writer:
            self.writer.close()
        # The events are derived from metrics.jsonl alone: a new file means new events.
        for old in self.logdir.glob("events.out.tfevents.*"):
            old.unlink()
        self.writer = SummaryWriter(log_dir=str(self.logdir))
        self.identity, self.offset = identity, 0

    def poll(self):
        try:
            st = self.metrics.stat()
        except FileNotFoundError:
            return
        if st.st_mtime < self.since - CLOCK_SLACK_S:
            return
        identity = (st.st_dev, st.st_ino)
        if identity != self.identity or st.st_size < self.offset:
            self._restart(identity)
        with open(self.metrics, "rb") as f:
            f.seek(self.offset)
            chunk = f.read()
        end = chunk.rfind(b"\n") + 1  # a line still being written waits for the next poll
        for line in chunk[:end].splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and "step" in record:
                for tag, value in record_scalars(record):
                    self.writer.add_scalar(tag, value, global_step=int(record["step"]))
        self.offset += end
        self.writer.flush()

    def close(self):
        if self.writer:
            self.writer.close()


def input_closed(timeout):
    """Waits up to `timeout` seconds; True once standard input is at its end."""
    ready, _, _ = select.select([sys.stdin], [], [], timeout)
    return bool(ready) and not os.read(sys.stdin.fileno(), 4096)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="the run's output folder (holds metrics.jsonl)")
    parser.add_argument("--since", type=float, default=0.0,
                        help="follow only a metrics.jsonl modified after this time (seconds since the epoch)")
    args = parser.parse_args()
    follower = Follower(args.output, args.since)
    try:
        while True:
            follower.poll()
            if input_closed(POLL_S):
                break
        follower.poll()
    finally:
        follower.close()


if __name__ == "__main__":
    main()
