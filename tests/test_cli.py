"""The command line's own behaviour: sizes and settings it accepts, and the help it prints."""

import argparse
import re
import subprocess
import sys

import pytest

from warpsim.cli import build_parser, main
from warpsim.registry import parse_env_settings

SUBCOMMANDS = ("bench", "check", "train", "evaluate", "render")


@pytest.mark.parametrize("num_envs", ["0", "-3"])
def test_bench_refuses_a_non_positive_num_envs_like_every_command(num_envs, capsys):
    assert main(["bench", "--num-envs", num_envs, "--backend", "numpy", "--steps", "1"]) == 2
    assert f"num_envs={num_envs} is not allowed; give an integer >= 1" in capsys.readouterr().err


@pytest.mark.parametrize("text, value", [("true", True), ("TRUE", True), ("True", True), ("false", False),
                                         ("False", False), ("fAlSe", False)])
def test_set_takes_true_and_false_in_any_case(text, value):
    assert parse_env_settings("tag_continuous", [f"use_full_observation={text}"]) == {"use_full_observation": value}


@pytest.mark.parametrize("text", ["none", "None", "NONE"])
def test_set_takes_none_in_any_case_but_for_a_string_parameter(text):
    assert parse_env_settings("simple_spread", [f"num_agent_neighbors={text}"]) == {"num_agent_neighbors": None}
    assert parse_env_settings("tag_continuous", ["observation_dtype=none"]) == {"observation_dtype": "none"}


def test_the_command_line_starts_without_the_compiler_or_the_statistics():
    """torch.compile's dynamo and scipy.stats took 3 of every command's 7 seconds to start on two cores; the commands
    that use them import them when they do."""
    loaded = subprocess.run([sys.executable, "-c", "import sys, warpsim.cli; print(*sorted(sys.modules))"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert "torch" in loaded and "warpsim.train.compiled" in loaded and "warpsim.analysis.statistics" in loaded
    assert "torch._dynamo" not in loaded and "scipy.stats" not in loaded


def subparsers() -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_help_is_plain_text(command):
    text = subparsers()[command].format_help()
    assert not re.search(r"``|:[a-z]+:`", text), text


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_option_has_help(command):
    missing = [action.option_strings[0] for action in subparsers()[command]._actions
               if action.option_strings and not action.help]
    assert not missing, f"warpsim {command}: no help for {', '.join(missing)}"


def test_flags_that_would_be_ignored_are_refused_or_said(tmp_path, capsys):
    gridworld = ["train", "--env", "tag_gridworld", "--backend", "numpy", "--num-envs", "2", "--rollout-steps", "4",
                 "--iterations", "1", "--quiet"]
    assert main([*gridworld, "--policy-head", "tanh_normal", "--run-dir", str(tmp_path / "a")]) == 2
    assert ("--policy-head tanh_normal chooses the distribution of continuous actions, and tag_gridworld's actions "
            "are discrete; leave it out") in capsys.readouterr().err
    assert main([*gridworld, "--wandb", "", "--run-dir", str(tmp_path / "b")]) == 2
    assert "--wandb '': the Weights & Biases project name is empty" in capsys.readouterr().err
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
    assert main([*gridworld, "--config", "tag-small", "--run-dir", str(tmp_path / "c")]) == 0
    assert ("note: --env tag_gridworld replaces --config tag-small's environment (tag_continuous), and so its "
            "environment parameters too") in capsys.readouterr().err


def test_a_preset_sized_for_a_gpu_says_so_when_its_environments_run_on_the_cpu(tmp_path, capsys):
    short = ["train", "--config", "grid-chase", "--backend", "numpy", "--iterations", "1", "--rollout-steps", "2",
             "--stagger-steps", "0", "--quiet"]
    assert main([*short, "--run-dir", str(tmp_path / "full")]) == 0
    note = ("note: grid-chase is sized for a GPU, and its 2000 environments of 5 agents will step in NumPy on the "
            "CPU, many times slower than on a GPU; the presets sized for a CPU are tag-small,")
    assert note in capsys.readouterr().err
    assert main([*short, "--num-envs", "8", "--run-dir", str(tmp_path / "small")]) == 0
    assert "sized for a GPU" not in capsys.readouterr().err
    assert main(["train", "--config", "tag-small", "--iterations", "1", "--num-envs", "2000", "--rollout-steps", "2",
                 "--quiet", "--run-dir", str(tmp_path / "cpu-preset")]) == 0
    assert "sized for a GPU" not in capsys.readouterr().err
