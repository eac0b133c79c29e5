"""The fused path (``compile``): the rollout's policy step and the update's minibatch step as
compiled functions, against the eager path, the reference. On the CPU inductor compiles C++
(tens of seconds a shape on a small machine), on a GPU Triton; the same tests run on both."""

import json
import shutil
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import pytest
import torch
from torch._dynamo.exc import TorchDynamoException
from torch.utils._python_dispatch import TorchDispatchMode

from warpsim.bench import kernel_counts
from warpsim.bench.runner import summary
from warpsim.cli import main
from warpsim.errors import InvalidValueError, UnavailableError
from warpsim.train import TrainConfig, Trainer, compiled, fused_backward
from warpsim.train.compiled import resolve_compile
from warpsim.train.config import build_saved_config
from warpsim.train.loop import start_line
from warpsim.train.run_dir import RunDirectory
from warpsim.train.trainer import resolve_precision

ROOT = Path(__file__).resolve().parent.parent
COMPILER = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
needs_compiler = pytest.mark.skipif(COMPILER is None, reason="torch.compile needs a C++ compiler on the CPU")
TAG: dict[str, Any] = dict(env="tag_continuous", env_params=dict(num_taggers=2, num_runners=3, episode_length=10),
                           num_envs=4, rollout_steps=6, epochs=2, minibatches=2)
BEACON: dict[str, Any] = dict(env="beacon", env_params=dict(num_agents=3, episode_length=8, continuous_actions=True),
                              num_envs=4, rollout_steps=6, epochs=2, minibatches=2)
ON_THE_CPU = pytest.param("cpu", marks=[needs_compiler, pytest.mark.slow])
ON_THE_GPU = pytest.param("gpu", marks=pytest.mark.gpu)


def twins(device: str, settings: dict, gradient_kernels: str = "off", **changes) -> tuple[Trainer, Trainer]:
    """An eager trainer and a fused one of the same config and seed (``gradient_kernels``: the fused one's)."""
    backend = {"backend": "numpy"} if device == "cpu" else {"backend": "cuda", "graphs": "on"}
    config = dict(settings, **backend, **changes)
    return (Trainer(TrainConfig(**config, compile="off")),
            Trainer(TrainConfig(**config, compile="on", gradient_kernels=gradient_kernels)))


@pytest.mark.parametrize("device", [ON_THE_CPU, ON_THE_GPU])
@pytest.mark.parametrize("settings, precision, gradient_kernels", [
    (TAG, "fp32", "off"), (BEACON, "fp32", "off"), (TAG, "bf16", "off"), (BEACON, "bf16", "off"),
    (TAG, "bf16", "on"), (BEACON, "bf16", "on"), (dict(BEACON, shared_trunk=True), "bf16", "off"),
    (dict(BEACON, shared_trunk=True, hidden_layers=1), "bf16", "on"), (TAG, "bf16", "loss"),
], ids=["discrete", "continuous", "discrete bf16", "continuous bf16", "discrete, gradient kernels",
        "continuous, gradient kernels", "shared trunk bf16", "shared trunk, one layer, gradient kernels",
        "discrete, the loss in the gradient kernels"])
def test_the_fused_path_acts_and_learns_as_the_eager_one(device, settings, precision, gradient_kernels):
    """Three iterations from one seed: the same discrete actions from the same generators (the draws
    are made outside the compiled step), continuous ones, log-probabilities and values, networks and
    statistics within the rounding of fused arithmetic (bf16 networks: within bf16's, the rollout's
    networks as one kernel, and with ``gradient_kernels`` the update's networks and gradients too, and its loss with
    ``loss``)."""
    eager, fused = twins(device, settings, gradient_kernels, precision=precision)
    assert fused.compiled and not eager.compiled and fused.learner.fused_step is not None
    assert fused.policies.fused is (precision == "bf16") and not eager.policies.fused
    assert fused.policies.gradient_kernels is (gradient_kernels in ("on", "loss"))
    assert fused.policies.loss_kernels is (gradient_kernels == "loss")
    tolerance: dict[str, Any] = dict(rtol=1e-4, atol=1e-5) if precision == "fp32" else dict(rtol=2e-2, atol=2e-2)
    initial = [parameter.detach().clone() for parameter in eager.policies.parameters()]
    for iteration in range(3):
        eager.iterate()
        fused.iterate()
        if iteration == 0:  # the same rollouts: the statistics of the first update differ by roundings only
            assert_statistics_agree(fused, eager, rel=0.05)
        for mine, theirs in zip(fused.storage.values(), eager.storage.values()):
            if mine.actions.is_floating_point():
                torch.testing.assert_close(mine.actions, theirs.actions, **tolerance)
                seen = acted = torch.ones_like(mine.values, dtype=torch.bool)
            else:  # later bf16 networks may differ by a rounding, and so play otherwise from there on
                if iteration == 0 or precision == "fp32":
                    assert torch.equal(mine.actions, theirs.actions)
                seen, acted = played_alike(mine.actions, theirs.actions)
                assert acted.float().mean() >= 0.5, "the twins' rollouts parted at once"
            torch.testing.assert_close(mine.log_probs[acted], theirs.log_probs[acted], **tolerance)
            torch.testing.assert_close(mine.values[seen], theirs.values[seen], **tolerance)
    if precision == "fp32":
        for fused_parameter, eager_parameter in zip(fused.policies.parameters(), eager.policies.parameters()):
            torch.testing.assert_close(fused_parameter, eager_parameter, **tolerance)
    else:  # Adam steps a near-zero bf16 gradient by about the learning rate either way: the updates as a whole agree
        fused_update, eager_update = (torch.cat([(parameter.detach() - start).flatten() for parameter, start in
                                                 zip(trainer.policies.parameters(), initial)])
                                      for trainer in (fused, eager))
        assert torch.nn.functional.cosine_similarity(fused_update, eager_update, dim=0) > 0.9
    # bf16 twins play apart from a rounding on, and their later statistics are over partly other samples (on an
    # H200 the third update's approx_kl once differed by 9%)
    assert_statistics_agree(fused, eager, rel=0.05 if precision == "fp32" else 0.25)
    assert torch.equal(fused.generators[0].get_state(), eager.generators[0].get_state()), "the same draws"
    assert fused.compile_seconds() > 0 and eager.compile_seconds() == 0


def assert_statistics_agree(fused: Trainer, eager: Trainer, rel: float) -> None:
    """The last update's statistics of both trainers, within ``rel``."""
    (fused_metrics,), (eager_metrics,) = fused.read_metrics(), eager.read_metrics()
    for name in ("approx_kl", "value_loss", "policy_loss", "entropy", "learning_rate"):
        assert fused_metrics[name] == pytest.approx(eager_metrics[name], rel=rel, abs=1e-4), name


def played_alike(mine: torch.Tensor, theirs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Where two rollouts of discrete actions int32[R, T, E, A, C] saw the same observations (bool[R, T, E, A]:
    every step of an environment up to its first step with an action that differs, that one included) and
    where they also took the same actions, so that their values, and their log-probabilities, compare."""
    differs = (mine != theirs).any(-1)
    environment_differs = differs.any(-1, keepdim=True).int()
    seen = (environment_differs.cumsum(1) - environment_differs == 0).expand_as(differs)
    return seen, seen & ~differs


@pytest.fixture
def a_gpu(monkeypatch) -> Callable[[tuple[int, int]], None]:
    """Stands in for cuda:0, a Tesla T4 of the compute capability given (``a_gpu((7, 5))``)."""
    def of(capability: tuple[int, int]) -> None:
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
        monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "Tesla T4")
        monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    return of


@pytest.mark.parametrize("setting, device, world, precision, hybrid, fused", [
    ("auto", "cuda", 1, "bf16", False, True), ("auto", "cpu", 1, "fp32", False, False),
    ("auto", "cuda", 2, "bf16", False, False), ("auto", "cuda", 1, "fp16", False, False),
    ("auto", "cuda", 1, "bf16", True, False), ("on", "cpu", 1, "fp32", False, True), ("off", "cuda", 1, "bf16", False,
                                                                                      False),
])
def test_auto_fuses_on_a_gpu_in_one_process(a_gpu, setting, device, world, precision, hybrid, fused):
    a_gpu((9, 0))
    assert resolve_compile(setting, torch.device(device), world, precision, hybrid) is fused


@pytest.mark.parametrize("capability, precision", [((7, 5), "fp32"), ((8, 0), "bf16"), ((9, 0), "bf16")])
def test_precision_auto_is_bf16_on_a_gpu_that_computes_it_and_fp32_on_older_ones(a_gpu, capability, precision):
    a_gpu(capability)
    assert resolve_precision("auto", torch.device("cuda")) == precision
    assert resolve_precision("auto", torch.device("cpu")) == "fp32"


def test_bf16_on_a_gpu_older_than_warpsims_bfloat16_kernels_is_refused_by_on_and_left_eager_by_auto(a_gpu):
    a_gpu((7, 5))
    with pytest.raises(UnavailableError) as error:
        resolve_compile("on", torch.device("cuda"), 1, "bf16", False)
    assert str(error.value) == ("compile='on' under precision='bf16' runs warpsim's bfloat16 kernels, which need a "
                                "GPU of compute capability 8.0 or newer, and the networks' device is cuda:0 (Tesla "
                                "T4, compute capability 7.5); use precision='fp32' (--precision fp32), or "
                                "compile='off'")
    assert resolve_compile("auto", torch.device("cuda"), 1, "bf16", False) is False
    assert resolve_compile("on", torch.device("cuda"), 1, "fp32", False) is True
    assert resolve_compile("auto", torch.device("cuda"), 1, "fp32", False) is True


def test_compile_on_under_bf16_on_an_older_gpu_is_refused_before_any_file(a_gpu, monkeypatch, tmp_path, capsys):
    from warpsim.device import Placement
    from warpsim.train import trainer

    a_gpu((7, 0))
    gpu = torch.device("cuda", 0)
    monkeypatch.setattr(trainer, "place_training", lambda backend, policy_device, world: (Placement("cuda", gpu), gpu))
    code = main(["train", "--env", "tag_gridworld", "--num-envs", "2", "--iterations", "1", "--compile", "on",
                 "--precision", "bf16", "--run-dir", str(tmp_path / "run")])
    assert code == 2 and not (tmp_path / "run").exists()
    assert "which need a GPU of compute capability 8.0 or newer, and the networks' device is cuda:0 (Tesla T4, " \
           "compute capability 7.0)" in capsys.readouterr().err


@pytest.mark.parametrize("changes, expected", [
    (dict(precision="fp16"), "compile='on' does not combine with precision='fp16'"),
    (dict(world=2), "compile='on' runs in one process, and torchrun started 2"),
    (dict(hybrid=True), "compile='on' needs the networks on the environments' device"),
])
def test_on_refuses_what_it_cannot_fuse(changes, expected):
    settings = {**dict(precision="bf16", world=1, hybrid=False), **changes}
    with pytest.raises(InvalidValueError, match=expected):
        resolve_compile("on", torch.device("cuda"), settings["world"], settings["precision"], settings["hybrid"])


@pytest.mark.parametrize("value", ["yes", True, None, "loss"])
def test_compile_must_be_auto_on_or_off(value):
    with pytest.raises(InvalidValueError, match=rf"config field compile={value!r} is not allowed; choose one of auto, "
                                                r"on, off"):
        TrainConfig(env="tag_gridworld", compile=value)


def test_a_compile_failure_is_one_line_naming_the_way_out(monkeypatch):
    def failing(function, **options):
        def run(*args):
            raise TorchDynamoException("backend='inductor' raised:\nRuntimeError: Cannot find a working triton "
                                       "installation")
        return run

    monkeypatch.setattr(compiled.torch, "compile", failing)
    trainer = Trainer(TrainConfig(**TAG, backend="numpy", compile="on"))
    with pytest.raises(UnavailableError) as error:
        trainer.iterate()
    message = str(error.value)
    assert "\n" not in message and message.startswith("config field compile: torch.compile could not compile the "
                                                      "rollout's policy step (TorchDynamoException: backend='inductor'")
    assert message.endswith("train with compile='off' (--compile off), the eager path")


@pytest.mark.parametrize("words", ["AssertionError: ", "Unsupported: Tensor.tolist() with non-integer tensor"])
def test_a_compile_failure_that_names_exceptions_alone_says_where_torch_raised_it(monkeypatch, words):
    """An assertion of inductor's says nothing of itself ("InductorError: AssertionError:", as torch 2.11's did on
    an H200): the line names the function and the line of the file that raised it; an error that says what went
    wrong is left as it is."""
    def failing(function, **options):
        def reorder_loops_by_dep_pair():
            raise TorchDynamoException(words)

        return lambda *args: reorder_loops_by_dep_pair()

    monkeypatch.setattr(compiled.torch, "compile", failing)
    with pytest.raises(UnavailableError) as error:
        compiled.Compiled(lambda: None, "the update's minibatch step")()
    line = next(number for number, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                if "raise TorchDynamoException(words)" in text)
    where = f"; raised in reorder_loops_by_dep_pair, test_compiled.py:{line}" if words.endswith(": ") else ""
    assert str(error.value) == ("config field compile: torch.compile could not compile the update's minibatch step "
                                f"(TorchDynamoException: {words.strip()}{where}); train with compile='off' "
                                "(--compile off), the eager path")


def refusing_ptxas(monkeypatch) -> None:
    """``torch.compile`` makes functions that print a kernel's code and raise the error Triton raises where ptxas
    refuses a kernel for the GPU at hand."""
    from triton.runtime.errors import PTXASError

    def compile_refused(compiled_function, **options):
        def run(*args):
            print(".version 8.7\n.target sm_75\n// the whole kernel")
            raise PTXASError("Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas /tmp/k.ptx, line 1053; error "
                             "  : Feature 'cvt.bf16x2.f32' requires .target sm_80 or higher\nRepro command: ptxas")
        return run

    monkeypatch.setattr(compiled.torch, "compile", compile_refused)


@pytest.mark.parametrize("setting, ways_out", [
    ("off", ""), ("on", "gradient_kernels='off', or "),
    ("loss", "gradient_kernels='on', or gradient_kernels='off', or ")])
def test_a_kernel_that_triton_cannot_build_is_one_line_naming_ptxas_words_and_the_ways_out(
        monkeypatch, capsys, setting, ways_out):
    """The update's minibatch step as its learner compiles it (``gradient_kernels``: ``setting``), whose kernel
    ptxas refuses: one line, naming the settings that turn off, one after the other, what it runs of warpsim's."""
    pytest.importorskip("triton")
    trainer = Trainer(TrainConfig(**TAG, backend="numpy", compile="on", precision="bf16", gradient_kernels=setting))
    refusing_ptxas(monkeypatch)
    assert trainer.learner.fused_step is not None
    step = compiled.Compiled(lambda: None, "the update's minibatch step", trainer.learner.fused_step._ways_out)
    with pytest.raises(UnavailableError) as error:
        step()
    assert str(error.value) == (f"config field compile: Triton could not build a kernel of the update's minibatch "
                                f"step (PTXASError: Feature 'cvt.bf16x2.f32' requires .target sm_80 or higher); "
                                f"train with {ways_out}compile='off' (--compile off), the eager path")
    assert capsys.readouterr().out == ""


def test_a_trainer_whose_kernel_triton_cannot_build_stops_with_one_line(monkeypatch):
    pytest.importorskip("triton")
    refusing_ptxas(monkeypatch)
    trainer = Trainer(TrainConfig(**TAG, backend="numpy", compile="on"))
    with pytest.raises(UnavailableError, match=r"^config field compile: Triton could not build a kernel of the "
                                               r"rollout's policy step \(PTXASError: Feature 'cvt\.bf16x2\.f32'"):
        trainer.iterate()


def test_a_compiled_function_prints_what_it_prints_and_raises_what_is_not_a_compile_failure(monkeypatch, capsys):
    def printing(function, **options):
        def run(*args):
            print("as printed")
            return function(*args)
        return run

    monkeypatch.setattr(compiled.torch, "compile", printing)
    assert compiled.Compiled(lambda value: value + 1, "a step")(1) == 2
    with pytest.raises(ZeroDivisionError):
        compiled.Compiled(lambda value: value / 0, "a step")(1)
    assert capsys.readouterr().out == "as printed\nas printed\n"


def test_a_run_saved_with_compile_loss_resumes_eagerly():
    saved = TrainConfig(env="tag_gridworld").to_dict()
    del saved["compile"]
    assert build_saved_config({**saved, "compile_loss": True}).compile == "off"


def test_the_start_line_says_whether_the_networks_run_fused(tmp_path, capsys):
    assert main(["train", "--env", "tag_gridworld", "--backend", "numpy", "--num-envs", "2", "--rollout-steps", "4",
                 "--iterations", "1", "--compile", "off", "--run-dir", str(tmp_path / "run")]) == 0
    assert "epochs, not fused" in capsys.readouterr().err


@pytest.mark.parametrize("option", [["--compile", "on"], ["--gradient-kernels"]])
def test_bench_compile_needs_a_policy_tier(option, tmp_path, capsys):
    code = main(["bench", "--env", "tag_gridworld", "--num-envs", "1", "--backend", "numpy", *option,
                 "--steps", "2", "--repeats", "1", "--results-dir", str(tmp_path)])
    assert code == 2
    assert f"{option[0]} sets how the policy tiers run the networks; give it with --tier sim+policy or --tier " \
           f"train" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())


@pytest.mark.parametrize("changes, message", [
    (dict(compile="off"), "on needs the fused path under bf16, and this config has compile='off'"),
    (dict(compile="on", precision="fp32"), "precision='fp32'"),
])
def test_gradient_kernels_off_the_fused_bf16_path_are_refused_by_the_config(changes, message):
    with pytest.raises(InvalidValueError, match=message):
        TrainConfig(**TAG, gradient_kernels="on", **changes)


@pytest.mark.parametrize("device, capability, hidden, layers, runs", [
    ("cuda", (9, 0), 64, 2, True), ("cuda", (9, 0), 32, 1, True), ("cuda", (8, 6), 64, 2, False),
    ("cuda", (10, 0), 64, 2, False), ("cuda", (9, 0), 128, 2, False), ("cuda", (9, 0), 64, 3, False),
    ("cpu", (9, 0), 64, 2, False)])
def test_gradient_kernels_auto_runs_them_on_the_gpus_and_networks_they_were_measured_on(
        monkeypatch, device, capability, hidden, layers, runs):
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device: capability)
    assert fused_backward.pay_off(torch.device(device), hidden, layers) is runs


@pytest.mark.parametrize("setting, pays, said", [
    ("auto", True, "fused, the update's gradients as kernels (compiled"), ("auto", False, "fused (compiled"),
    ("loss", False, "fused, the update's loss and gradients as kernels (compiled")])
def test_gradient_kernels_auto_resolves_once_on_the_fused_path_and_the_start_line_says_how(
        monkeypatch, tmp_path, setting, pays, said):
    monkeypatch.setattr(fused_backward, "pay_off", lambda device, hidden, layers: pays)
    trainer = Trainer(TrainConfig(**TAG, backend="numpy", compile="on", precision="bf16", gradient_kernels=setting))
    assert trainer.policies.gradient_kernels is (pays or setting == "loss")
    line = start_line(trainer, [RunDirectory(tmp_path / "run", resume=False)], False)
    assert line.endswith(f"epochs, {said} at the first iteration)")
    eager = Trainer(TrainConfig(**TAG, backend="numpy", compile="off", precision="bf16"))
    assert not eager.policies.gradient_kernels


def test_gradient_kernels_are_a_choice_and_a_run_saved_with_true_or_false_resumes_with_on_or_off():
    with pytest.raises(InvalidValueError, match=r"^config field gradient_kernels=True is not allowed; choose one of "
                                                r"auto, on, off, loss$"):
        TrainConfig(**TAG, gradient_kernels=cast(Any, True))
    saved = TrainConfig(**TAG, compile="on", precision="bf16").to_dict()
    assert build_saved_config({**saved, "gradient_kernels": True}).gradient_kernels == "on"
    assert build_saved_config({**saved, "gradient_kernels": False}).gradient_kernels == "off"


def test_gradient_kernels_where_the_run_resolves_off_the_fused_path_are_refused_before_any_file(tmp_path, capsys):
    """compile auto and precision auto on a CPU: eager fp32, known once the trainer resolves them."""
    code = main(["train", "--env", "tag_gridworld", "--backend", "numpy", "--num-envs", "2", "--iterations", "1",
                 "--compile", "auto", "--gradient-kernels", "on", "--run-dir", str(tmp_path / "run")])
    assert code == 2 and not (tmp_path / "run").exists()
    assert "gradient_kernels='on' needs the fused path under bf16 with networks at most 128 wide, and this run " \
           "resolved to compile=False, precision='fp32', hidden_size=64: set compile='on' and precision='bf16', " \
           "or gradient_kernels 'auto' or 'off'" in capsys.readouterr().err


def test_gradient_kernels_where_only_the_precision_resolves_off_the_fused_path_name_the_precision(capsys):
    """compile on and precision auto on a CPU (fp32): the way out is the precision alone."""
    code = main(["bench", "--config", "train-ref", "--tier", "train", "--compile", "on", "--gradient-kernels"])
    assert code == 2
    assert "resolved to compile=True, precision='fp32', hidden_size=64: set precision='bf16', or " \
           "gradient_kernels 'auto' or 'off'" in capsys.readouterr().err


@needs_compiler
@pytest.mark.slow
@pytest.mark.parametrize("setting, said", [("on", "gradient kernels"), ("loss", "gradient kernels with the loss")])
def test_bench_times_the_train_tier_with_gradient_kernels_and_says_so(tmp_path, setting, said):
    assert main(["bench", "--env", "tag_gridworld", "--set", "num_taggers=2", "--set", "grid_length=5", "--num-envs",
                 "2", "--backend", "numpy", "--tier", "train", "--precision", "bf16", "--compile", "on",
                 "--gradient-kernels", setting, "--steps", "4", "--repeats", "1", "--warmup", "1",
                 "--results-dir", str(tmp_path)]) == 0
    (record,) = json.loads(next(tmp_path.glob("*.json")).read_text())
    assert record["compiled"] and record["update"]["gradient_kernels"]
    assert record["update"]["loss_kernels"] is (setting == "loss")
    assert f"bf16, eager launches, fused networks and {said}): " in summary(record)


def test_bench_compile_loss_names_its_replacement(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--tier", "train", "--compile-loss"])
    assert "--compile-loss was removed in warpsim 0.2.0: --compile on compiles the whole minibatch step" in \
        capsys.readouterr().err


def two_runs_networks():
    """Two runs' tagger networks, stacked, of an environment with 15 inputs (60 bytes a float32 row) and 22
    logits; nine rows of observations."""
    from warpsim.registry import make
    from warpsim.train.policy import RolePolicies
    from warpsim.train.run_policies import RunPolicies

    env = make("tag_continuous", 1, backend="numpy", num_taggers=1, num_runners=2)
    runs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        runs.append(RolePolicies(env.spec, ["tagger", "runner"], 1, 16, 3))
    network = RunPolicies(runs).network("tagger")
    return network, torch.randn(2, 9, env.spec.observation_size, generator=torch.Generator().manual_seed(2))


def test_the_fused_path_runs_both_first_layers_as_one_product():
    """The actor's and the critic's first layers as one product (the observations read once, forward and
    backward): the same outputs and gradients, up to the order of float32 sums; eagerly, two products."""
    network, observations = two_runs_networks()
    outputs = []
    for joint in (False, True):
        network.joint_first_layers = joint
        network.zero_grad()
        policy, value = network(observations)
        (policy.square().sum() + value.sum()).backward()
        outputs.append((policy.detach(), value.detach(), [torch.zeros(()) if p.grad is None else p.grad.clone()
                                                          for p in network.parameters()]))
    (policy, value, grads), (joint_policy, joint_value, joint_grads) = outputs
    torch.testing.assert_close(joint_policy, policy, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(joint_value, value, rtol=1e-6, atol=1e-6)
    for grad, joint_grad in zip(grads, joint_grads, strict=True):
        torch.testing.assert_close(joint_grad, grad, rtol=1e-5, atol=1e-6)
    eager, fused = (Trainer(TrainConfig(**TAG, backend="numpy", compile=setting)) for setting in ("off", "on"))
    assert not eager.policies.network("tagger").joint_first_layers
    assert fused.policies.network("tagger").joint_first_layers


class RowSums(TorchDispatchMode):
    """The shapes of the tensors that sums reduce over their rows (dimension 1 of [R, B, ...])."""

    def __init__(self):
        super().__init__()
        self.shapes: list[tuple[int, ...]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket.__name__ == "sum" and len(args) > 1 and 1 in list(args[1]):
            self.shapes.append(tuple(args[0].shape))
        return func(*args, **(kwargs or {}))


def test_the_fused_paths_joint_first_layers_take_their_biases_gradient_from_their_product():
    """The biases are the joint weight's column past the inputs, where the rows hold 1: their gradient is a column
    of the weight's. Eagerly each layer's bias sums its output's gradient over the rows; jointly the two first
    layers' do not (as one product with a bias of its own, one sum would remain)."""
    network, observations = two_runs_networks()
    summed = {}
    for joint in (False, True):
        network.joint_first_layers = joint
        network.zero_grad()
        policy, value = network(observations)
        with RowSums() as sums:
            (policy.square().sum() + value.sum()).backward()
        summed[joint] = sums.shapes
    width = network.trunk[0].weight.shape[1]
    assert sum(shape[-1] == width for shape in summed[False]) >= 2
    assert len(summed[True]) == len(summed[False]) - 2


def test_the_fused_paths_further_layers_add_their_biases_after_their_products():
    """A batched product with a broadcast bias (``baddbmm``) first copies the bias into every row of its output: the
    fused path's further layers of each trunk add theirs after their products instead (compiled, into the tanh's
    kernel), the same outputs up to a rounding; the policy's head keeps its ``baddbmm``."""
    network, observations = two_runs_networks()
    products, outputs = {}, []
    for joint in (False, True):
        network.joint_first_layers = joint
        with kernel_counts.Counter() as ops:
            outputs.append(network(observations))
        products[joint] = (ops.tally.by_op["baddbmm"], ops.tally.by_op["bmm"])
    assert products == {False: (7, 0), True: (1, 5)}  # three layers a trunk and the head; the first two joint
    for joint_output, output in zip(outputs[1], outputs[0], strict=True):
        torch.testing.assert_close(joint_output, output, rtol=1e-5, atol=1e-6)


class UnalignedOperands(TorchDispatchMode):
    """The last two sizes of every matrix product's operand whose rows are not 16-byte aligned
    (``kernel_counts.aligned_matrix``)."""

    def __init__(self):
        super().__init__()
        self.shapes: set[tuple[int, ...]] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        result = func(*args, **(kwargs or {}))
        if func.overloadpacket.__name__ in kernel_counts.PRODUCTS:
            self.shapes |= {tuple(tensor.shape[-2:]) for tensor in kernel_counts.tensors([args, result])
                            if not kernel_counts.aligned_matrix(tensor)}
        return result


def test_the_fused_paths_products_read_and_write_rows_padded_to_16_bytes_and_compute_as_on_the_rows_as_they_are():
    """cuBLAS's vectorised kernels need 16-byte aligned rows, and 15 float32 inputs are 60 bytes, 22 logits 88: the
    joint first layers read the inputs and their weight padded with zeros to the kernels' alignment (16 inputs), and
    the policy's head writes 32 logits, 10 of them zeros sliced off, forward and backward; the same on inputs stored
    padded. The eager networks' products read 15 and write 22."""
    from warpsim.train import fused_forward

    network, observations = two_runs_networks()
    stored = fused_forward.aligned_rows(observations)
    assert stored.shape[-1] == 16
    unaligned, outputs = {}, []
    for joint, inputs in ((False, observations), (True, observations), (True, stored)):
        network.joint_first_layers = joint
        network.zero_grad()
        with UnalignedOperands() as products:
            policy, value = network(inputs)
            (policy.square().sum() + value.sum()).backward()
        unaligned[joint] = products.shapes
        outputs.append([policy, value, *(parameter.grad for parameter in network.parameters())])
    assert any(15 in shape for shape in unaligned[False]) and any(22 in shape for shape in unaligned[False])
    assert not unaligned[True] and outputs[1][0].shape[-1] == 22
    for on_padded, on_unpadded in zip(outputs[2], outputs[1], strict=True):
        assert torch.equal(on_padded, on_unpadded)


@pytest.mark.gpu
def test_on_a_gpu_the_fused_updates_products_run_in_kernels_that_load_16_bytes_at_a_time():
    """cuBLAS picks its kernels by its operands' alignment: train-ref's networks on the fused path, whose products
    read and write 16-byte aligned rows, take none of those that load less at a time (``iteration_profile.
    unaligned_gemm``; six launches an optimizer step at c4ea203, 0.72 ms on an H200)."""
    from helpers import load_script
    from torch.profiler import ProfilerActivity, profile

    from warpsim.configs import NAMED_CONFIGS

    iteration_profile = load_script(ROOT / "benchmarks" / "iteration_profile.py")
    named = NAMED_CONFIGS["train-ref"]
    assert isinstance(named.env, str)
    trainer = Trainer(TrainConfig(env=named.env, env_params=dict(named.params), num_envs=16, rollout_steps=8,
                                  backend="cuda", precision="bf16", compile="on", graphs="off"))
    trainer.iterate()
    next_values = trainer.rollout()
    with profile(activities=[ProfilerActivity.CUDA]) as profiler:
        trainer.update(next_values)
        torch.cuda.synchronize()
    names = [event.key for event in profiler.key_averages() if event.device_time_total > 0]
    assert any("gemm" in name or "nvjet" in name for name in names), names
    assert not [name for name in names if iteration_profile.unaligned_gemm(name)]


@pytest.mark.parametrize("shared", [False, True])
def test_a_networks_weights_round_to_bfloat16_in_one_kernel_as_each_alone_rounds(shared):
    """``fused_weights`` of two-layer trunks, as inductor writes it for a GPU: one kernel rounds every weight and
    bias (the first layer's rows aligned), where a conversion each was a kernel each; the operands are each
    tensor's own rounding, a one-column head's float32, bit for bit. (Deeper trunks stack their further layers,
    which inductor writes as copies for a CPU's tensors, and as part of the same kernel for a GPU's.)"""
    pytest.importorskip("triton")
    from warpsim.bench import region_counts
    from warpsim.registry import make
    from warpsim.train import fused_forward
    from warpsim.train.policy import RolePolicies
    from warpsim.train.run_policies import RunPolicies, StackedLinear

    env = make("tag_continuous", 1, backend="numpy", num_taggers=1, num_runners=2)
    runs = []
    for seed in (0, 1):
        torch.manual_seed(seed)
        runs.append(RolePolicies(env.spec, ["tagger", "runner"], 1, 16, 2, shared_trunk=shared))
    network = RunPolicies(runs).network("tagger")
    code, _ = region_counts.gpu_code(lambda: network.fused_weights(), ())
    assert len(region_counts.LAUNCH.findall(code)) == 1
    operands = network.fused_weights()
    first, second = (layer for layer in network.trunk.modules() if isinstance(layer, StackedLinear))
    policy_head, value_head = network.policy_head, network.value_head
    assert isinstance(policy_head, StackedLinear) and isinstance(value_head, StackedLinear)
    aligned = fused_forward.aligned_rows(first.weight)
    assert torch.equal(operands[0], aligned.to(torch.bfloat16)) and operands[0].shape[-1] % 16 == 0
    assert torch.equal(operands[2][:, 0], second.weight.to(torch.bfloat16))
    assert torch.equal(operands[9], policy_head.bias.to(torch.bfloat16))
    assert operands[10].dtype == torch.float32 and torch.equal(operands[10], value_head.weight)
    assert (operands[4].numel() == 0) == shared == operands[-1]


def test_a_fused_rollout_converts_each_roles_weights_once_and_plays_as_converting_them_each_step(monkeypatch):
    """The kernel's weights (bfloat16, stacked, rows aligned: ``RunPolicies.fused_weights``) are made once a
    rollout, not at each of its steps, with the same actions, log-probabilities and values bit for bit. The
    policy step and the record run eagerly here (their compiled form is the same code)."""
    from warpsim.train.run_policies import StackedActorCritic

    made = []
    fused_weights = StackedActorCritic.fused_weights

    def counted(network):
        made.append(network)
        return fused_weights(network)

    monkeypatch.setattr(StackedActorCritic, "fused_weights", counted)
    storages = []
    for at_each_step in (False, True):
        trainer = Trainer(TrainConfig(**dict(TAG, rollout_steps=5), backend="numpy", compile="on", precision="bf16"))
        assert trainer.policies.fused
        collector = trainer.collector
        collector.policy_step, collector.record = collector._policy_step, collector._record
        if at_each_step:
            monkeypatch.setattr(trainer.policies, "fused_weights", lambda role_names: None)
        made.clear()
        trainer.rollout()
        steps = 5 + 1  # the last observations' values too
        assert len(made) == (len(collector.names) * steps if at_each_step else len(collector.names))
        storages.append([tensor.clone() for rollout in trainer.storage.values()
                         for tensor in (rollout.actions, rollout.log_probs, rollout.values)])
    for once, each_step in zip(*storages, strict=True):
        assert torch.equal(once, each_step)


def test_the_fused_path_stores_inputs_padded_as_its_kernel_reads_them_and_plays_as_the_eager_one():
    """A fused rollout stores each input row padded with zeros to the kernels' alignment, and the kernel reads
    the stored step in place (no padded copy of it); the inputs stored, and the first iteration's actions,
    log-probabilities and values, are the eager path's. The policy step runs eagerly here."""
    from warpsim.train import fused_forward
    from warpsim.train.run_policies import StackedActorCritic

    read = []
    fused_observations = StackedActorCritic.fused_observations

    def spied(observations):
        read.append(fused_observations(observations))
        return read[-1]

    eager, fused = (Trainer(TrainConfig(**TAG, backend="numpy", compile=setting, precision="bf16"))
                    for setting in ("off", "on"))
    collector = fused.collector
    collector.policy_step, collector.record = collector._policy_step, collector._record
    StackedActorCritic.fused_observations = staticmethod(spied)  # type: ignore[method-assign]
    try:
        fused.rollout()
    finally:
        StackedActorCritic.fused_observations = staticmethod(fused_observations)  # type: ignore[method-assign]
    eager.rollout()
    stored = fused.storage["runner"].observations
    width = eager.storage["runner"].observations.shape[-1]
    assert width % fused_forward.ROW_ALIGNMENT and stored.shape[-1] == fused_forward.aligned_size(width)
    assert not stored[..., width:].any()
    assert any(tensor.untyped_storage().data_ptr() == stored.untyped_storage().data_ptr() for tensor in read)
    for mine, theirs in zip(fused.storage.values(), eager.storage.values()):
        assert torch.equal(mine.observations[..., :width], theirs.observations)
        assert torch.equal(mine.actions, theirs.actions)
        torch.testing.assert_close(mine.log_probs, theirs.log_probs, rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(mine.values, theirs.values, rtol=2e-2, atol=2e-2)


def test_every_region_compiles_whole_without_inductors_loop_reordering(monkeypatch):
    """Reordering loops after fusion failed an assertion of torch 2.11's inductor on an H200, compiling the
    minibatch step of continuous actions at the shapes of test_the_fused_path_acts_and_learns_as_the_eager_one."""
    settings: list[dict] = []

    def compile(function, **given):
        settings.append(given)
        return function

    monkeypatch.setattr(torch, "compile", compile)
    region = compiled.Compiled(lambda x: x + 1, "a region")
    assert settings == [dict(fullgraph=True, dynamic=False, options={"loop_ordering_after_fusion": False})]
    assert torch.equal(region(torch.zeros(2)), torch.ones(2))


def test_each_compiled_function_has_its_own_code_object():
    """Dynamo keeps graphs and counts recompilations per code object (``compiled.own_code``): the copy
    computes as the original, bound methods stay bound."""
    class Doubler:
        def __init__(self, factor: float):
            self.factor = factor

        def apply(self, x: torch.Tensor, shift: float = 1.0) -> torch.Tensor:
            return x * self.factor + shift

    doubler = Doubler(2.0)
    copy = compiled.own_code(doubler.apply)
    assert isinstance(copy, types.MethodType)
    assert copy.__func__.__code__ is not Doubler.apply.__code__ and copy.__self__ is doubler
    assert torch.equal(copy(torch.ones(3)), torch.full((3,), 3.0))
    plain = compiled.own_code(resolve_compile)
    assert plain.__code__ is not resolve_compile.__code__ and plain.__name__ == "resolve_compile"


@needs_compiler
@pytest.mark.slow
def test_a_process_compiles_every_trainer_it_makes():
    """An experiment's batches train in turn in one process, each a new trainer of its own shapes: with
    dynamo's limit on recompilations of one code object at 2, three trainers compile and iterate (they
    shared the code of the rollout's step and failed at the third). The limit is set by dynamo's own patch:
    pytest's monkeypatch deletes a setting that the config module serves rather than holds, and every later
    compile in the process then failed."""
    limit = torch._dynamo.config.recompile_limit
    with torch._dynamo.config.patch(recompile_limit=2):
        for num_envs in (2, 3, 4):
            Trainer(TrainConfig(**dict(TAG, num_envs=num_envs), backend="numpy", compile="on",
                                iterations=1)).iterate()
    assert torch._dynamo.config.recompile_limit == limit
