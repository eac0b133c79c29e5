"""Peer tools side by side (warpsim.bench.peers, benchmarks/peers/, benchmarks/cpu_baseline.py), without the tools.

The peers' own packages are not installed here: fake Python executables stand in for
their virtual environments, and the real peer scripts are run where their tool is
missing, which must come back as a status, not a crash.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import fake_python, load_script

from warpsim.bench import peers, runner
from warpsim.configs import NAMED_CONFIGS
from warpsim.device import device_name, resolve_placement
from warpsim.source_commit import source_commit

ROOT = Path(__file__).resolve().parent.parent


peer_timing = load_script(ROOT / "benchmarks" / "peers" / "peer_timing.py")

RATES = {"median": 2000.0, "min": 1800.0, "max": 2100.0}
OK_OUTPUT = {
    "tool": "vmas", "tool_version": "1.5.2", "env": "simple_tag", "device": "Some CPU", "backend": "torch-cpu",
    "precision": "fp32", "observation": "full", "num_envs": 64, "requested_num_envs": 4096, "num_agents": 25,
    "num_taggers": 2, "num_runners": 23, "params": {"num_adversaries": 2, "num_good_agents": 23},
    "thread_mapping": "PyTorch", "versions": {"vmas": "1.5.2"}, "steps": 20, "repeats": 3, "warmup_steps": 5,
    "max_seconds": 120.0, "startup_seconds": 0.5, "status": "ok",
    "batch_sweep": [{"num_envs": 64, "status": "ok", "agent_steps_per_second": 2000.0},
                    {"num_envs": 4096, "status": "time: too slow"}],
    "env_steps_per_second": {name: value / 25 for name, value in RATES.items()},
    "agent_steps_per_second": RATES,
}




def test_agents_split_one_tagger_to_ten_runners_like_the_peer_scripts():
    assert peers.taggers_and_runners(110) == (10, 100)
    assert peers.taggers_and_runners(25) == (2, 23)
    assert peers.taggers_and_runners(2) == (1, 1)
    for num_agents in range(2, 400):
        assert peers.taggers_and_runners(num_agents) == peer_timing.taggers_and_runners(num_agents)
    with pytest.raises(ValueError, match="num_agents=1 is not allowed"):
        peers.taggers_and_runners(1)


def test_tag_params_are_train_ref_with_runners_staying_in_the_game():
    params = peers.tag_params(110)
    expected = dict(NAMED_CONFIGS["train-ref"].params, runner_exits_game_after_tagged=False)
    assert params == expected
    small = peers.tag_params(5)
    assert (small["num_taggers"], small["num_runners"], small["num_other_agents_observed"]) == (1, 4, 4)


def test_ok_output_becomes_a_sim_record_in_the_same_file_as_warpsim_records(tmp_path):
    record = peers.peer_record(OK_OUTPUT, config="cpu-baseline-N25")
    assert (record["tool"], record["tier"], record["config"], record["status"]) == (
        "vmas", "sim", "cpu-baseline-N25", "ok")
    assert (record["num_envs"], record["requested_num_envs"], record["num_agents"]) == (64, 4096, 25)
    assert record["agent_steps_per_second"] == RATES and record["steps_per_repeat"] == 20
    assert record["warpsim_commit"] == source_commit()
    assert record["batch_sweep"][1]["status"] == "time: too slow"
    assert "steps" not in record and "tool_version" not in record
    warpsim_record = {"device": "Some CPU", "backend": "numpy"}
    assert runner.device_slug(record) == runner.device_slug(warpsim_record) == "cpu-some-cpu"
    path = runner.append_result(record, tmp_path)
    assert json.loads(path.read_text())[0]["tool"] == "vmas"


def test_ok_output_without_rates_is_refused():
    output = {name: value for name, value in OK_OUTPUT.items() if name != "agent_steps_per_second"}
    with pytest.raises(ValueError, match="lacks agent_steps_per_second"):
        peers.peer_record(output)
    with pytest.raises(ValueError, match="status=None"):
        peers.peer_record({"tool": "vmas"})


def test_a_failed_peer_keeps_its_reason_and_has_no_rates():
    record = peers.peer_record({"tool": "mpe2", "num_agents": 110, "status": "memory: MemoryError: "})
    assert record["status"].startswith("memory") and "agent_steps_per_second" not in record


@pytest.mark.parametrize("name, module", [("warpdrive", "example_envs"), ("vmas", "vmas"), ("mpe2", "mpe2"),
                                          ("jaxmarl", "jax")])
def test_real_peer_script_reports_a_missing_tool_as_its_status(name, module):
    if importlib.util.find_spec(module) is not None:
        pytest.skip(f"{module} is installed in this environment")
    output = peers.run_peer(name, Path(sys.executable), num_agents=5, steps=1, repeats=1, warmup_steps=1)
    assert output["status"] == f"missing tool: No module named '{module}'", output
    assert output["num_agents"] == 5
    assert peers.peer_record(output)["status"].startswith("missing tool")


def test_a_fake_peer_python_that_prints_a_status(tmp_path):
    python = fake_python(tmp_path, 'print(json.dumps({"tool": "vmas", "num_agents": int(sys.argv[sys.argv.index('
                                   '"--num-agents") + 1]), "status": "memory: cannot allocate"}))')
    output = peers.run_peer("vmas", python, num_agents=7, num_envs=(1, 64))
    assert output == {"tool": "vmas", "num_agents": 7, "status": "memory: cannot allocate"}


def test_a_peer_that_runs_past_its_timeout(tmp_path):
    python = fake_python(tmp_path, "time.sleep(30)")
    output = peers.run_peer("mpe2", python, num_agents=25, timeout=0.5)
    assert output["status"] == "time: no result within the timeout of 0.5 s"
    assert (output["tool"], output["num_agents"]) == ("mpe2", 25)


def test_a_peer_that_crashes_without_json(tmp_path):
    python = fake_python(tmp_path, 'print("starting"); sys.exit("boom: no GPU")')
    output = peers.run_peer("warpdrive", python, num_agents=25)
    assert output["status"] == ("error: warpdrive_cpu.py exited with code 1 without a JSON result; "
                                "last error line: boom: no GPU")


def test_a_missing_python_or_unknown_peer_is_a_clear_error(tmp_path):
    missing = tmp_path / "peers-venv" / "vmas" / "bin" / "python"
    with pytest.raises(ValueError, match=r"peer 'vmas': Python executable .*python' does not exist.*README"):
        peers.run_peer("vmas", missing, num_agents=25)
    with pytest.raises(ValueError, match="peer 'gym' is not known; allowed: warpdrive, vmas, mpe2, jaxmarl"):
        peers.parse_peer(f"gym={sys.executable}")
    with pytest.raises(ValueError, match="give NAME=PYTHON"):
        peers.parse_peer("vmas")


def test_a_peers_python_may_be_a_command_on_the_path(tmp_path, monkeypatch):
    python = fake_python(tmp_path, "")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert peers.parse_peer("vmas=python") == ("vmas", python)
    with pytest.raises(ValueError, match=r"peer 'vmas': Python executable 'python9' does not exist"):
        peers.parse_peer("vmas=python9")
    assert peers.parse_peer(f"mpe2={sys.executable}") == ("mpe2", Path(sys.executable))


def test_ratio_table_divides_warpsim_rates_by_each_peer():
    warpsim_25 = {"tool": "warpsim", "backend": "numpy", "num_envs": 256, "num_agents": 25,
                  "observation": "partial K=10", "agent_steps_per_second": {"median": 1e6},
                  "env_steps_per_second": {"median": 4e4}}
    warpsim_110 = dict(warpsim_25, num_agents=110, agent_steps_per_second={"median": 5e5})
    vmas_25 = peers.peer_record(OK_OUTPUT)
    mpe2_110 = peers.peer_record({"tool": "mpe2", "num_agents": 110, "status": "time: too slow"})
    table = peers.ratio_table([mpe2_110, vmas_25, warpsim_110, warpsim_25])
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in table.splitlines()[2:]]
    assert [(row[0], row[1]) for row in rows] == [("25", "warpsim"), ("25", "vmas"), ("110", "warpsim"),
                                                  ("110", "mpe2")]
    assert rows[1][5:8] == ["2.000e+03", "8.000e+01", "500.0x"]
    assert rows[3][5:9] == ["-", "-", "-", "time: too slow"]
    assert rows[0][7] == "-" and rows[0][8] == "ok"


def test_peer_timing_takes_the_fastest_batch_size_and_stops_at_the_budget(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["peer", "--num-agents", "10", "--num-envs", "1,4,16,64",
                                      "--steps", "2", "--repeats", "3", "--warmup-steps", "1", "--max-seconds", "1"])
    args = peer_timing.parse_args("test")
    clock = {"now": 0.0}
    monkeypatch.setattr(peer_timing.time, "perf_counter", lambda: clock["now"])
    # per env-step: E=4 is the fastest; E=16 fits only 1 step per repeat; E=64 is over budget in its warm-up
    seconds_per_step = {1: 0.01, 4: 0.02, 16: 0.2, 64: 2.0}

    def make_step(num_envs):
        def step():
            clock["now"] += seconds_per_step[num_envs]
        return step

    result: dict[str, Any] = {}
    peer_timing.best_of_batch_sizes(make_step, args, result)
    assert (result["num_envs"], result["steps"]) == (4, 2)
    assert result["env_steps_per_second"]["median"] == pytest.approx(4 / 0.02)
    assert result["agent_steps_per_second"]["median"] == pytest.approx(10 * 4 / 0.02)
    sweep = result["batch_sweep"]
    assert [(entry["num_envs"], entry["status"], entry.get("steps")) for entry in sweep[:3]] == [
        (1, "ok", 2), (4, "ok", 2), (16, "ok", 1)]
    assert sweep[2]["agent_steps_per_second"] == pytest.approx(10 * 16 / 0.2)
    assert sweep[3]["status"] == "time: E=64: 1 warm-up steps took 2 s, more than --max-seconds=1"


def test_peer_timing_names_the_reason_a_tool_cannot_run():
    assert peer_timing.failure_status(ModuleNotFoundError("No module named 'vmas'")) == \
        "missing tool: No module named 'vmas'"
    assert peer_timing.failure_status(MemoryError()).startswith("memory")
    assert peer_timing.failure_status(RuntimeError("DefaultCPUAllocator: can't allocate memory")).startswith("memory")
    assert peer_timing.failure_status(peer_timing.OverBudget("slow")) == "time: slow"
    assert peer_timing.failure_status(ValueError("bad")) == "error: ValueError: bad"


def test_cpu_baseline_measures_warpsim_and_a_peer_in_one_run(tmp_path, capsys):
    cpu_baseline = load_script(ROOT / "benchmarks" / "cpu_baseline.py")
    output = dict(OK_OUTPUT, tool="mpe2", num_envs=1, requested_num_envs=1,
                  device=device_name(resolve_placement("numpy")))
    python = fake_python(tmp_path, "output = json.loads(%r)\n"
                                   "output['num_agents'] = int(sys.argv[sys.argv.index('--num-agents') + 1])\n"
                                   "print(json.dumps(output))" % json.dumps(output))
    code = cpu_baseline.main(["--peer", f"mpe2={python}", "--agents", "4,6", "--num-envs", "2", "--steps", "1",
                              "--repeats", "1", "--warmup-steps", "1", "--results-dir", str(tmp_path / "results")])
    assert code == 0
    saved = json.loads(next((tmp_path / "results").glob("*.json")).read_text())
    assert [(r["tool"], r["num_agents"], r["config"]) for r in saved] == [
        ("warpsim", 4, "cpu-baseline-N4"), ("mpe2", 4, "cpu-baseline-N4"),
        ("warpsim", 6, "cpu-baseline-N6"), ("mpe2", 6, "cpu-baseline-N6")]
    assert saved[0]["params"]["runner_exits_game_after_tagged"] is False
    table = capsys.readouterr().out
    assert table.count("| mpe2 |") == 2 and "x |" in table


def test_peer_timing_waits_for_asynchronous_work_before_reading_the_clock(monkeypatch):
    """A step that only launches its work (as JAX does): the work's time counts through ``wait``."""
    monkeypatch.setattr(sys, "argv", ["peer", "--num-agents", "10", "--steps", "4", "--repeats", "2",
                                      "--warmup-steps", "2"])
    args = peer_timing.parse_args("test")
    clock = {"now": 0.0, "pending": 0}
    monkeypatch.setattr(peer_timing.time, "perf_counter", lambda: clock["now"])
    waited = []

    def step():  # launching takes 1 ms; each launched step takes 10 ms once waited for
        clock["now"] += 0.001
        clock["pending"] += 1
        return f"step {clock['pending']}"

    def wait(launched):
        waited.append(launched)
        clock["now"] += 0.01 * clock["pending"]
        clock["pending"] = 0

    timing = peer_timing.time_steps(step, 2, 10, args, wait)
    assert waited == ["step 1", "step 1", "step 4", "step 4"], "each warm-up step, then the last step of a repeat"
    assert timing["env_steps_per_second"]["median"] == pytest.approx(4 * 2 / (4 * 0.011))
    assert peer_timing.time_steps(step, 2, 10, args)["env_steps_per_second"]["median"] == pytest.approx(
        4 * 2 / 0.004), "without wait only the launches are timed"


JAXMARL_GPU_OUTPUT: dict[str, Any] = dict(
    OK_OUTPUT, tool="jaxmarl", tool_version="0.2.0", env="MPE_simple_tag_v3", device="NVIDIA H100 80GB HBM3",
    backend="jax-cuda", thread_mapping="jax.jit of jax.vmap over environments, compiled by XLA",
    versions={"python": "3.12.3", "jaxmarl": "0.2.0", "jax": "0.10.2", "jaxlib": "0.10.2"})


def test_gpu_peers_runs_each_peer_at_each_configs_e_x_n_and_files_it_under_the_gpu(tmp_path, capsys):
    gpu_peers = load_script(ROOT / "benchmarks" / "gpu_peers.py")
    # The fake JaxMARL fits at most 600,000 agents in all in memory: 500 x 1000, not 1000 x 1000.
    python = fake_python(tmp_path, "output = json.loads(%r)\n"
                                   "argv = dict(zip(sys.argv[2::2], sys.argv[3::2]))\n"
                                   "num_agents, num_envs = int(argv['--num-agents']), int(argv['--num-envs'])\n"
                                   "output.update(num_agents=num_agents, num_envs=num_envs,\n"
                                   "              requested_num_envs=num_envs,\n"
                                   "              batch_sweep=[{'num_envs': num_envs, 'status': 'ok'}])\n"
                                   "if num_agents * num_envs > 600_000:\n"
                                   "    output = {'tool': 'jaxmarl', 'status': 'memory: Out of memory'}\n"
                                   "print('Importing submoduled environments...')\n"
                                   "print(json.dumps(output))" % json.dumps(JAXMARL_GPU_OUTPUT))
    code = gpu_peers.main(["--peer", f"jaxmarl={python}", "--config", "train-ref", "--config", "headline",
                           "--results-dir", str(tmp_path / "results")])
    assert code == 0
    (saved,) = (tmp_path / "results").glob("*.json")
    assert saved.name == "nvidia-h100-80gb-hbm3.json", "beside warpsim's records of the same GPU"
    records = json.loads(saved.read_text())
    assert [(r["tool"], r["config"], r["num_agents"], r["num_envs"], r["requested_num_envs"]) for r in records] == [
        ("jaxmarl", "train-ref", 110, 2000, 2000), ("jaxmarl", "headline", 1000, 500, 2000)]
    assert [(entry["num_envs"], entry["status"][:6]) for entry in records[1]["batch_sweep"]] == [
        (2000, "memory"), (1000, "memory"), (500, "ok")]
    assert records[0]["backend"] == "jax-cuda" and records[0]["versions"]["jax"] == "0.10.2"
    assert records[0]["tier"] == "sim" and records[0]["status"] == "ok"
    assert "| jaxmarl | jax-cuda | 500 |" in capsys.readouterr().out


def test_a_peer_that_fits_nowhere_reports_its_last_failure(tmp_path):
    python = fake_python(tmp_path, 'print(json.dumps({"tool": "jaxmarl", "status": "memory: out of memory"}))')
    output = peers.run_peer_where_it_fits("jaxmarl", python, num_agents=10, num_envs=3)
    assert output["status"] == "memory: out of memory" and output["requested_num_envs"] == 3
    assert [entry["num_envs"] for entry in output["batch_sweep"]] == [3], "3, then 1: the last failure is the output"
    with pytest.raises(ValueError, match="num_envs=0 is not allowed; give an integer >= 1"):
        peers.run_peer_where_it_fits("jaxmarl", python, num_agents=10, num_envs=0)


def test_gpu_peers_refuses_a_config_peers_do_not_run(capsys):
    gpu_peers = load_script(ROOT / "benchmarks" / "gpu_peers.py")
    with pytest.raises(SystemExit):
        gpu_peers.main(["--peer", f"jaxmarl={sys.executable}", "--config", "grid"])
    error = capsys.readouterr().err  # argparse quotes the choices from Python 3.12.8 on
    assert "argument --config: invalid choice: 'grid'" in error and "train-ref" in error and "headline" in error
    assert gpu_peers.main(["--peer", "jax", "--config", "headline"]) == 2
    assert "gpu_peers: error: --peer 'jax' is not allowed; give NAME=PYTHON" in capsys.readouterr().err


def test_the_vmas_spread_script_reports_a_missing_vmas_as_its_status():
    """benchmarks/peers/vmas_spread.py, run where VMAS is not installed: one JSON line, the reason in it."""
    if importlib.util.find_spec("vmas") is not None:
        pytest.skip("vmas is installed in this environment")
    script = ROOT / "benchmarks" / "peers" / "vmas_spread.py"
    result = subprocess.run([sys.executable, str(script), "--num-agents", "3", "--num-envs", "1,2"], capture_output=True,
                            text=True, timeout=120, cwd=script.parent)
    output = json.loads(result.stdout)
    assert result.returncode == 0 and output["status"] == "missing tool: No module named 'vmas'", result.stderr[-500:]
    assert output["num_agents"] == 3 and output["requested_num_envs"] == 2


def test_a_pytorch_peer_runs_on_the_gpu_where_torch_sees_one_and_waits_for_it():
    """peer_timing.torch_device's GPU path, which only a GPU machine takes, run here with a stand-in torch."""
    synchronized = []

    class Cuda:
        available = True

        @classmethod
        def is_available(cls):
            return cls.available

        @staticmethod
        def get_device_name():
            return "NVIDIA H200"

        @staticmethod
        def synchronize():
            synchronized.append(True)

    class Torch:
        cuda = Cuda

    result: dict[str, Any] = {"device": "Some CPU"}
    device, wait = peer_timing.torch_device(Torch, result)
    wait("launched")
    assert (device, result, synchronized) == ("cuda", {"device": "NVIDIA H200", "backend": "torch-cuda"}, [True])
    Cuda.available = False
    result = {"device": "Some CPU"}
    assert peer_timing.torch_device(Torch, result) == ("cpu", None)
    assert result == {"device": "Some CPU", "backend": "torch-cpu"}
