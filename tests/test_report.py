"""benchmarks/report.py renders the benchmark page and its plots from result records alone."""

import io
import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest
from helpers import load_script

from warpsim.configs import NAMED_CONFIGS

REPORT = Path(__file__).resolve().parent.parent / "benchmarks" / "report.py"
H100, XEON = "NVIDIA H100 80GB HBM3", "Intel(R) Xeon(R) Processor"


def load_report(path=REPORT):
    return load_script(path, "report")


def record(config, backend, agent_rate, num_envs=2000, num_agents=1000, date="2026-12-01T10:00:00+00:00",
           **extra):
    device = H100 if "cuda" in backend else XEON
    fields = {"date": date, "tool": "warpsim", "config": config, "tier": "sim", "precision": "fp32",
              "backend": backend, "device": device, "env": "tag_continuous", "num_envs": num_envs,
              "requested_num_envs": num_envs, "num_agents": num_agents,
              "agent_steps_per_second": {"median": agent_rate, "min": agent_rate, "max": agent_rate},
              "env_steps_per_second": {"median": agent_rate / num_agents, "min": 0, "max": 0},
              "floor": {"bytes_per_env_step": 37865, "flops_per_env_step": 65500, "copy_bandwidth_gb_per_s": 3000.0,
                        "fp32_gflop_per_s": 50000.0, "memory_floor_seconds_per_env_step": 1.26e-8,
                        "compute_floor_seconds_per_env_step": 1.3e-9, "run_seconds_per_env_step": 1.1e-7,
                        "fraction_of_memory_floor": 0.115}}
    return {**fields, **extra}


@pytest.fixture
def results(tmp_path):
    grid = NAMED_CONFIGS["grid"]
    old_format = {  # written before records named their tool and config: matched by its parameters
        "date": "2026-11-22T14:46:46+00:00", "device": XEON, "backend": "numpy", "env": "tag_gridworld",
        "params": dict(grid.params, num_taggers=4), "num_envs": 8, "num_agents": 5,
        "agent_steps_per_second": {"median": 5e5, "min": 5e5, "max": 5e5}}
    gpu = [record("headline", "cuda", 2e9), record("train-ref", "cuda", 4e8, num_agents=110),
           record("sweep-E", "cuda", 1e6, num_envs=1, num_agents=110),
           record("sweep-E", "cuda", 1e8, num_envs=64, num_agents=110)]
    cpu = [record("headline", "numpy", 1e6, num_envs=4, requested_num_envs=2000, date="2026-12-01T10:30:00+00:00"),
           record("headline", "numpy", 5e5, num_envs=4, date="2026-10-01T10:30:00+00:00"),
           record("train-ref", "numpy", 2e5, num_envs=64, num_agents=110),
           record("sweep-E", "numpy", 1e5, num_envs=1, num_agents=110),
           record("sweep-E", "numpy", 2e5, num_envs=64, requested_num_envs=16384, num_agents=110), old_format]
    peer = record("train-ref", "cuda", 2e7, num_agents=110, tool="vmas")
    del peer["floor"], peer["tier"]
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "nvidia-h100-80gb-hbm3.json").write_text(json.dumps(gpu + [peer]))
    (tmp_path / "results" / "cpu-intel-r-xeon-r-processor.json").write_text(json.dumps(cpu))
    return tmp_path / "results"


def test_the_page_and_plots_come_from_the_records(results, tmp_path):
    page = load_report().render(results, tmp_path / "docs").read_text()
    assert (tmp_path / "docs" / "benchmarks" / "sweep-E.png").stat().st_size > 1000
    assert (tmp_path / "docs" / "benchmarks" / "floor.png").stat().st_size > 1000
    assert not (tmp_path / "docs" / "benchmarks" / "sweep-N.png").exists()
    assert "![sweep-E](benchmarks/sweep-E.png)" in page and "No sweep-N records yet." in page
    assert "python benchmarks/report.py" in page and "$" not in page

    rows = {tuple(cell.strip() for cell in line.split("|")[1:7]): line for line in page.splitlines()
            if line.startswith("| ") and "|---" not in line}
    headline_gpu = rows[("headline", "warpsim", "cuda", "sim", "fp32", H100)]
    assert "| 2,000x |" in headline_gpu  # over the numpy record of the same day, not the older one
    train_gpu = rows[("train-ref", "warpsim", "cuda", "sim", "fp32", H100)]
    assert "| 2,000x |" in train_gpu
    vmas = rows[("train-ref", "vmas", "cuda", "sim", "fp32", H100)]
    assert "| 100x | 20x |" in vmas  # vs the NumPy baseline, and warpsim's GPU over vmas
    headline_cpu = rows[("headline", "warpsim", "numpy", "sim", "fp32", XEON)]
    assert "| baseline |" in headline_cpu and "| 4 of 2000 |" in headline_cpu
    assert ("grid", "warpsim", "numpy", "sim", "fp32", XEON) in rows
    assert "No GPU figures yet for: grid, sweep-N." in page
    assert "37.9 kB" in page and "11.5 %" in page  # the floor table
    assert "generated from 11 of the 11 records" in page and "`benchmarks/placement.py`\n(0;" in page


def test_the_floor_is_the_memory_floor_also_where_the_brute_force_search_would_cost_more(results, tmp_path):
    grid_search = record("headline", "cuda", 2e9)
    grid_search["floor"].update(compute_floor_seconds_per_env_step=2e-6, run_seconds_per_env_step=4e-7)
    old_format = record("train-ref", "cuda", 4e8, num_agents=110)  # a combined floor and its fraction
    old_format["floor"].pop("fraction_of_memory_floor")
    old_format["floor"].update(floor_seconds_per_env_step=1.26e-8, fraction_of_floor=0.115)
    (results / "nvidia-h100-80gb-hbm3.json").write_text(json.dumps([grid_search, old_format]))
    page = load_report().render(results, tmp_path / "docs").read_text()
    rows = [line for line in page.splitlines() if "| warpsim cuda | sim |" in line]
    assert "| 12.6 ns | 2 us | 400 ns | 3.15 % |" in rows[0], "memory floor / measured, the compute floor apart"
    assert "| 12.6 ns | 1.3 ns | 110 ns | 11.5 % |" in rows[1]


def test_a_record_with_an_unknown_tier_is_refused(results, tmp_path):
    path = results / "cpu-intel-r-xeon-r-processor.json"
    path.write_text(json.dumps([record("headline", "numpy", 1e6, tier="rollout")]))
    with pytest.raises(ValueError, match="tier='rollout'; allowed: sim, sim\\+policy, train"):
        load_report().render(results, tmp_path / "docs")


def test_the_command_line_writes_the_page(results, tmp_path, capsys):
    assert load_report().main(["--results-dir", str(results), "--docs-dir", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "benchmarks.md").exists() and "wrote" in capsys.readouterr().out


def test_the_cpu_baseline_table_compares_the_newest_run_with_each_tool(tmp_path):
    report = load_report()
    newer = "2026-12-02T10:00:00+00:00"
    records = [record("cpu-baseline-N110", "numpy", 1e6, num_envs=256, num_agents=110, date=newer),
               record("cpu-baseline-N110", "numpy", 1e3, num_envs=256, num_agents=110),  # an older run
               record("cpu-baseline-N110", "cpu", 1e4, num_envs=1024, num_agents=110, tool="vmas", date=newer),
               record("cpu-baseline-N110", "cpu", 2e2, num_envs=1, num_agents=110, tool="mpe2", precision="fp64",
                      date=newer)]
    (tmp_path / "cpu.json").write_text(json.dumps(records))
    table = report.cpu_baseline_table(report.load_records(tmp_path))
    assert "| 110 | vmas | cpu | 1024 |" in table and "100.0x" in table
    assert "5,000.0x" in table, "mpe2 computes in float64, which the report accepts"
    assert "1.000e+03" not in table, "only the newest run is shown"


def test_eager_and_graph_records_of_one_config_are_rows_of_their_own(results, tmp_path):
    path = results / "nvidia-h100-80gb-hbm3.json"
    path.write_text(json.dumps([record("train-ref", "cuda", 2e8, num_agents=110, tier="train", launches="eager"),
                                record("train-ref", "cuda", 9e8, num_agents=110, tier="train", launches="cuda-graph",
                                       date="2026-12-01T11:00:00+00:00")]))
    page = load_report().render(results, tmp_path / "docs").read_text()
    rows = {tuple(cell.strip() for cell in line.split("|")[1:7]) for line in page.splitlines()
            if line.startswith("| ") and "|---" not in line}
    assert ("train-ref", "warpsim", "cuda", "train", "fp32", H100) in rows
    assert ("train-ref", "warpsim", "cuda", "train", "fp32 cuda-graph", H100) in rows
    path.write_text(json.dumps([record("train-ref", "cuda", 2e8, launches="replayed")]))
    with pytest.raises(ValueError, match="launches='replayed'; allowed: eager, cuda-graph"):
        load_report().render(results, tmp_path / "docs")


def test_placement_records_stay_out_of_the_page_and_are_counted(results, tmp_path):
    path = results / "nvidia-h100-80gb-hbm3.json"
    placement = record("train-ref", "cuda", 1.234e7, num_agents=110, tier="train", placement="all-gpu",
                       date="2026-12-02T10:00:00+00:00")
    path.write_text(json.dumps([record("train-ref", "cuda", 4e8, num_agents=110, tier="train"), placement]))
    page = load_report().render(results, tmp_path / "docs").read_text()
    assert "400 M" in page and "12.3 M" not in page
    assert "generated from 7 of the 8 records" in page and "`benchmarks/placement.py`\n(1;" in page


def test_the_committed_page_is_what_the_template_and_the_records_make(tmp_path):
    """Reads the committed files only (HEAD): a user's own records or edits in the checkout change nothing."""
    root = REPORT.parent.parent
    if not (root / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: the committed records cannot be told from local ones")
    committed = tmp_path / "committed"
    committed.mkdir()
    archive = subprocess.run(["git", "-C", str(root), "archive", "HEAD", "benchmarks", "docs"],
                             capture_output=True, check=True).stdout
    tarfile.open(fileobj=io.BytesIO(archive)).extractall(committed, filter="data")
    report = load_report(committed / "benchmarks" / "report.py")
    page = report.render(report.RESULTS_DIR, tmp_path).read_text()
    assert page == (report.DOCS_DIR / "benchmarks.md").read_text(), (
        "the committed docs/benchmarks.md is not what the committed benchmarks/results/*.json and "
        "benchmarks/report_template.md make: run python benchmarks/report.py and commit docs/benchmarks.md "
        "with the records")
