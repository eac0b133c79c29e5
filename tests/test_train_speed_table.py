"""benchmarks/train_speed_table.py, the one table of a GPU session's training-speed figures, read from the
committed H200 records laid out as benchmarks/gpu_session.sh writes them."""

import json
import shutil
from pathlib import Path

import pytest
from helpers import load_script

ROOT = Path(__file__).resolve().parent.parent
RECORDS = ROOT / "benchmarks" / "results" / "train-speed"
script = load_script(ROOT / "benchmarks" / "train_speed_table.py")


@pytest.fixture
def session(tmp_path) -> Path:
    """A GPU session's OUT: its bench records, the cost model's figures and a profile."""
    (tmp_path / "bench").mkdir()
    shutil.copy(RECORDS / "nvidia-h200.json", tmp_path / "bench" / "nvidia-h200.json")
    shutil.copy(RECORDS / "cost-model-cpu-amd-epyc.json", tmp_path / "iteration-cost.json")
    shutil.copy(RECORDS / "profile-fused-train-ref-nvidia-h200.json", tmp_path / "profile-fused.json")
    return tmp_path


def test_each_policy_tier_record_is_a_row_with_the_models_prediction_for_its_config_and_path(session, capsys):
    """The eager row beside the model's eager baseline, the fused row beside its fused figures (the record's
    main figures are those with gradient kernels, which no row here took)."""
    assert script.main([str(session), "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split(" | ") for line in lines if line.startswith("| train-ref | train")]
    model = json.loads((session / "iteration-cost.json").read_text())["train-ref"]
    eager, fused = (f"{model[path]['rollout']['predicted_ms']:.0f} / {model[path]['update']['predicted_ms']:.0f}"
                    for path in ("baseline", "fused"))
    assert eager != fused != f"{model['rollout']['predicted_ms']:.0f} / {model['update']['predicted_ms']:.0f}"
    assert [(row[2], row[3], row[4], row[5], row[6]) for row in rows] == [
        ("eager", "2.58e+07", "150.5", "701.2", eager), ("fused", "4.67e+07", "65.6", "404.9", fused)]


def test_each_profile_lists_its_most_expensive_kernels_per_phase(session, capsys):
    script.main([str(session), "--top", "3"])
    out = capsys.readouterr().out
    assert "train-ref, fused, a rollout step: 38.2 kernels" in out
    assert "train-ref, fused, an optimizer step: 225.3 kernels" in out
    kernels = [line for line in out.splitlines() if line.startswith("| `")]
    assert len(kernels) == 6 and "| `fused_actor_critic` | 2 | 0.2847 |" in kernels


def test_a_session_without_records_says_so_and_a_missing_folder_is_a_usage_error(tmp_path, capsys):
    assert script.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out == f"no records of a policy tier in {tmp_path / 'bench'}\n"
    with pytest.raises(SystemExit) as exited:
        script.main([str(tmp_path / "nowhere")])
    assert exited.value.code == 2 and "is not a folder" in capsys.readouterr().err
