"""benchmarks/mpe_speed.py: MPE2's rate and warpsim's, recorded side by side."""

import json
from pathlib import Path

import pytest
from helpers import load_script

pytest.importorskip("mpe2")
mpe_speed = load_script(Path(__file__).resolve().parent.parent / "benchmarks" / "mpe_speed.py")


def test_each_warpsim_record_carries_mpe2s_rate_beside_it(tmp_path, capsys):
    assert mpe_speed.main(["--seconds", "0.2", "--num-envs", "2", "--neighbours", "1", "--backend", "numpy",
                           "--results-dir", str(tmp_path)]) == 0
    [path] = tmp_path.iterdir()
    [record] = json.loads(path.read_text())
    assert record["env"] == "simple_spread" and record["num_envs"] == 2
    assert {key: record["params"][key] for key in ("N", "num_agent_neighbors", "num_landmark_neighbors")} == {
        "N": 3, "num_agent_neighbors": 1, "num_landmark_neighbors": 1}
    assert record["mpe2_agent_steps_per_second"] > 0 and record["adapter_agent_steps_per_second"] > 0
    table = capsys.readouterr().out.splitlines()
    assert table[0] == "| N | simulator | environments | agent-steps/s | x MPE2 |" and len(table) == 5


@pytest.mark.parametrize("scenario, agents, names", [("simple_tag", "4", ("num_adversaries", "num_good")),
                                                     ("simple_adversary", "3", ("N",)),
                                                     ("simple_speaker_listener", "2", ())])
def test_the_other_scenarios_are_timed_with_n_agents_in_all(scenario, agents, names, tmp_path):
    assert mpe_speed.main(["--scenario", scenario, "--agents", agents, "--seconds", "0.2", "--num-envs", "2",
                           "--backend", "numpy", "--results-dir", str(tmp_path)]) == 0
    [path] = tmp_path.iterdir()
    [record] = json.loads(path.read_text())
    assert record["env"] == scenario and record["num_agents"] == int(agents)
    assert all(name in record["params"] for name in names)
