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
    shutil.copy(RECORDS / "cost-model-cpu.json", tmp_path / "iteration-cost.json")
    shutil.copy(RECORDS / "profile-fused-train-ref-nvidia-h200.json", tmp_path / "profile-fused.json")
    return tmp_path


def predicted(model: dict) -> str:
    """A cost model record's prediction as the table gives it."""
    return f"{model['rollout']['predicted_ms']:.0f} / {model['update']['predicted_ms']:.0f}"


def test_each_policy_tier_record_is_a_row_with_the_models_prediction_for_its_config_and_path(session, capsys):
    """The eager row beside the model's eager baseline, the fused rows beside its fused figures, and those
    with gradient kernels beside its gradient kernels' (the record's main figures being the loss's in them)."""
    assert script.main([str(session), "--top", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split(" | ") for line in lines if line.startswith("| train-ref | train")]
    model = json.loads((session / "iteration-cost.json").read_text())["train-ref"]
    eager, fused, kernels = (predicted(model[path]) for path in ("baseline", "fused", "kernels"))
    assert len({eager, fused, kernels, predicted(model)}) == 4
    assert [(row[2], row[3], row[4], row[5], row[6]) for row in rows] == [
        ("eager", "2.58e+07", "150.5", "701.2", eager), ("fused", "4.67e+07", "65.6", "404.9", fused),
        ("fused, gradient kernels", "7.79e+07", "44.3", "238.0", kernels),
        ("fused", "7.56e+07", "44.4", "246.4", fused),
        ("fused, gradient kernels", "7.78e+07", "44.3", "238.2", kernels),
        ("fused", "7.55e+07", "44.3", "246.9", fused),
        ("fused, gradient kernels", "8.93e+07", "44.4", "201.8", kernels),
        ("fused", "8.5e+07", "44.5", "214.0", fused)]


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


def test_the_matrix_products_loading_under_16_bytes_are_told_apart_by_their_kernels_names(session, capsys):
    """In the H200's profile of the fused update at c4ea203, the CUTLASS kernels of bfloat16 operands aligned to
    1 and 2 elements (2 and 4 bytes) load under 16 bytes at a time, and neither cuBLAS's nvjet kernels nor the
    float32 ones aligned to 4 elements do; a profile that records them says so beside its phase's time."""
    profile = load_script(ROOT / "benchmarks" / "iteration_profile.py")
    records = [json.loads(file.read_text()) for file in sorted(RECORDS.glob("profile-*.json"))]
    names = {kernel["name"] for record in records for phase in ("rollout_per_step", "update_per_optimizer_step")
             for kernel in record[phase]["top"] if "gemm" in kernel["name"] or "nvjet" in kernel["name"]}
    unaligned = {name for name in names if profile.unaligned_gemm(name)}
    assert unaligned and all("_align1>" in name or "_align2>" in name for name in unaligned)
    assert any("aligna4" in name for name in names - unaligned) and any("nvjet" in name for name in names - unaligned)
    fused = json.loads((session / "profile-fused.json").read_text())
    update = fused["update_per_optimizer_step"]
    update["unaligned_gemms"] = profile.summary([(kernel["name"], kernel["launches"], kernel["ms"])
                                                 for kernel in update["top"]], 1)["unaligned_gemms"]
    (session / "profile-fused.json").write_text(json.dumps(fused))
    script.main([str(session), "--top", "3"])
    assert ("an optimizer step: 225.3 kernels, 4.250 ms of GPU time; matrix products loading under 16 bytes at a "
            "time: 6 launches, 0.716 ms") in capsys.readouterr().out


def test_a_record_with_the_loss_in_the_gradient_kernels_is_named_so_beside_the_models_figures_for_it(session, capsys):
    records = json.loads((session / "bench" / "nvidia-h200.json").read_text())
    loss = next(dict(record, update={**record["update"], "loss_kernels": True}) for record in reversed(records)
                if record["config"] == "train-ref" and record.get("update", {}).get("gradient_kernels"))
    (session / "bench" / "nvidia-h200.json").write_text(json.dumps([loss]))
    assert script.main([str(session)]) == 0
    (row,) = [line.split(" | ") for line in capsys.readouterr().out.splitlines() if line.startswith("| train-ref")]
    model = json.loads((session / "iteration-cost.json").read_text())["train-ref"]
    assert model["path"] == "loss" and (row[2], row[6]) == ("fused, the loss in the gradient kernels", predicted(model))
