"""benchmarks/mpe_speed.py: MPE2's rate and warpsim's, recorded side by side."""

import json
from pathlib import Path

import pytest
from helpers import fake_python, load_script

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


def test_without_a_results_directory_nothing_is_saved_and_the_last_line_says_how(tmp_path, monkeypatch, capsys):
    """Run from the checkout, as a newcomer would: the committed records stay as they are."""
    results = Path(__file__).resolve().parent.parent / "benchmarks" / "results"
    before = {path: path.stat().st_mtime_ns for path in results.rglob("*.json")}
    monkeypatch.chdir(results.parent.parent)
    assert mpe_speed.main(["--seconds", "0.2", "--num-envs", "2", "--neighbours", "1", "--backend", "numpy"]) == 0
    assert {path: path.stat().st_mtime_ns for path in results.rglob("*.json")} == before
    assert capsys.readouterr().err.strip().splitlines()[-1].endswith(
        "records were printed only; give --results-dir DIR to append them to DIR/<device>.json")


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


PEER_OUTPUT = """
n, e = int(sys.argv[sys.argv.index("--num-agents") + 1]), int(sys.argv[sys.argv.index("--num-envs") + 1])
rates = {"median": 1000.0 * n, "min": 900.0 * n, "max": 1100.0 * n}
print(json.dumps({"tool": "vmas", "env": "simple_spread", "device": "Some GPU", "backend": "torch-cuda",
                  "num_envs": e, "num_agents": n, "repeats": 1, "steps": 5, "thread_mapping": sys.argv[1],
                  "agent_steps_per_second": rates, "env_steps_per_second": rates, "status": "ok"}))
"""


def test_a_peers_simple_spread_is_recorded_beside_warpsims(tmp_path, capsys):
    python = fake_python(tmp_path, PEER_OUTPUT)
    assert mpe_speed.main(["--seconds", "0.2", "--num-envs", "2", "--backend", "numpy", "--peer", f"vmas={python}",
                           "--results-dir", str(tmp_path / "results")]) == 0
    files = {path.name: json.loads(path.read_text()) for path in (tmp_path / "results").iterdir()}
    [vmas] = files.pop("some-gpu.json")  # a record goes to its device's file
    [[warpsim]] = files.values()
    assert warpsim["config"] == vmas["config"] == "mpe-speed-simple_spread-N3"
    assert (vmas["tool"], vmas["num_envs"], vmas["thread_mapping"].rsplit("/", 1)[-1]) == ("vmas", 2, "vmas_spread.py")
    table = capsys.readouterr().out
    assert "| 3 | vmas torch-cuda (Some GPU) | 2 | 3e+03 |" in table


def test_a_peer_that_cannot_run_shows_why_and_records_nothing(tmp_path, capsys):
    python = fake_python(tmp_path, 'print(json.dumps({"tool": "jaxmarl", "status": "missing tool: jax"}))')
    assert mpe_speed.main(["--seconds", "0.2", "--num-envs", "2", "--backend", "numpy", "--peer",
                           f"jaxmarl={python}", "--results-dir", str(tmp_path / "results")]) == 0
    [path] = (tmp_path / "results").iterdir()
    assert [record["tool"] for record in json.loads(path.read_text())] == ["warpsim"]
    assert "| 3 | jaxmarl: missing tool: jax | - | - | - |" in capsys.readouterr().out


@pytest.mark.parametrize("flags, message", [
    (["--neighbours", "1"], "give it without --scenario and --neighbours"),
    (["--scenario", "simple_tag"], "give it without --scenario and --neighbours"),
    ([], "peer 'mpe2' is not known; allowed: vmas, jaxmarl"),
    (["--peer-seconds", "0"], "--peer-seconds 0.0: give a time budget above 0")])
def test_peers_time_simple_spread_at_full_observation_alone(flags, message, tmp_path, capsys):
    with pytest.raises(SystemExit):
        mpe_speed.main([*flags, "--peer", f"{'mpe2' if not flags else 'vmas'}={fake_python(tmp_path, '')}"])
    assert message in capsys.readouterr().err
