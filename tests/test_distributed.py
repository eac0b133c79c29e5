"""Two ranks under torchrun on the CPU (gloo): the same parameters, their own environments."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from ddp_worker import CONFIG

from warpsim.train import Trainer


@pytest.mark.slow(seconds=18)
def test_two_ranks_keep_identical_parameters_and_different_environments(tmp_path):
    worker = Path(__file__).with_name("ddp_worker.py")
    environment = {key: value for key, value in os.environ.items() if key != "NUMBA_ENABLE_CUDASIM"}
    environment["OMP_NUM_THREADS"] = "1"
    result = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         str(worker), str(tmp_path)], env=environment, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    rank0, rank1 = (torch.load(tmp_path / f"rank{r}.pt") for r in (0, 1))
    initial = list(Trainer(CONFIG).policies.parameters())
    for a, b, start in zip(rank0["parameters"], rank1["parameters"], initial):
        assert torch.equal(a, b)
        assert not torch.equal(a, start.detach()), "the ranks trained"
    assert not torch.equal(rank0["env"]["loc_x"], rank1["env"]["loc_x"]), "each rank has its own seeds"
    lines = (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["iteration"] for line in lines] == [1, 2, 3], "only rank 0 writes"
    assert json.loads(lines[-1])["env_steps"] == 2 * 3 * 4 * 8, "steps of both ranks are counted"
