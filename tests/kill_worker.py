"""A small training run that tests/test_kill_resume.py stops with SIGKILL at chosen moments.

``python tests/kill_worker.py RUN_DIR HOLD [SEEDS | continuous]`` trains the config below into
RUN_DIR, or resumes it there when RUN_DIR holds a run (has config.json or experiment.json), as a
user would after a crash; with SEEDS, an experiment of those seeds batched together; with
``continuous``, the beacon with continuous actions (a Gaussian policy) instead. HOLD is where the process stops to be killed: ``checkpoint:K`` halfway through
writing the bytes of its K-th checkpoint, ``metrics:K`` right after its K-th metrics
record, ``none`` nowhere. It prints ``holding`` when it stops there, and ``logging``
after its first metrics record. In an experiment the counts run over all its runs' files.
"""

import os
import sys
import time
from pathlib import Path

from warpsim.cli import main

COMMON = ["--num-envs", "4", "--rollout-steps", "8", "--backend", "numpy", "--iterations", "24",
          "--checkpoint-every", "2", "--log-every", "1", "--quiet"]
TRAIN = ["--env", "tag_gridworld", "--set", "num_taggers=2", "--set", "grid_length=5", "--set", "episode_length=8",
         *COMMON]
CONTINUOUS = ["--env", "beacon", "--set", "num_agents=3", "--set", "episode_length=8", "--set",
              "continuous_actions=true", *COMMON]


def watch_writes(hold: str) -> None:
    """Wraps os.write: prints ``logging`` at the process's first metrics record, and stops at ``hold``."""
    real_write = os.write
    kind, count = hold.split(":") if hold != "none" else ("none", "0")
    suffixes = {"checkpoint": "checkpoint.pt.partial", "metrics": "metrics.jsonl"}
    seen = {name: 0 for name in suffixes}

    def write(descriptor, data):
        target = os.readlink(f"/proc/self/fd/{descriptor}")
        name = next((name for name, suffix in suffixes.items() if target.endswith(suffix)), None)
        if name is None:
            return real_write(descriptor, data)
        seen[name] += 1
        if name == kind and seen[name] == int(count):
            real_write(descriptor, bytes(data[: len(data) // 2]) if kind == "checkpoint" else data)
            print("holding", flush=True)
            time.sleep(600)
        written = real_write(descriptor, data)
        if name == "metrics" and seen[name] == 1:
            print("logging", flush=True)
        return written

    os.write = write


if __name__ == "__main__":
    run_dir, hold, variant = Path(sys.argv[1]), sys.argv[2], sys.argv[3:]
    watch_writes(hold)
    if (run_dir / "config.json").exists() or (run_dir / "experiment.json").exists():
        sys.exit(main(["train", "--resume", "--run-dir", str(run_dir), "--quiet"]))
    if variant == ["continuous"]:
        sys.exit(main(["train", *CONTINUOUS, "--run-dir", str(run_dir)]))
    sys.exit(main(["train", *TRAIN, *(["--seeds", *variant] if variant else []), "--run-dir", str(run_dir)]))
