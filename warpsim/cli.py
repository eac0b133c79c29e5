"""The ``warpsim`` command line."""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import sysconfig
import traceback
from pathlib import Path

import warpsim
import warpsim.envs
import warpsim.kernels
from warpsim import commands as subcommands
from warpsim.bench import runner
from warpsim.bench.policy_tiers import POLICY_TIERS, run_policy_tier
from warpsim.bench.sweeps import NAMED_SWEEPS, run_sweep
from warpsim.check import check
from warpsim.configs import NAMED_CONFIGS, BenchConfig
from warpsim.device import gpu_available, resolve_placement, simulator_enabled
from warpsim.errors import InvalidValueError, WarpsimError
from warpsim.files import usable_directory
from warpsim.registry import parse_env_settings, portable_id, registered
from warpsim.removed import RemovedOption
from warpsim.source_commit import source_commit
from warpsim.train import loop as train_loop
from warpsim.train.config import COMPILE_SETTINGS, GRADIENT_KERNELS, PRECISIONS, TrainConfig


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return args.run(args)
    except (WarpsimError, OSError, MemoryError) as error:
        # A user's error (or what the system refused) is one line; --debug adds the traceback, which holds
        # the user's own one where their code failed (chained).
        if args.debug:
            traceback.print_exc()
        print(f"warpsim {args.command}: error: {one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        # The shell's convention: 128 + the signal (130 for Ctrl-C, 143 for SIGTERM).
        return 128 + getattr(interrupt, "signal_number", signal.SIGINT)
    except Exception as error:
        where = users_frame(error)
        if where is None or args.debug:
            traceback.print_exc()
        if where is None:
            print(f"warpsim {args.command}: internal error: this is a bug in warpsim; please report it with the "
                  f"command line and the traceback above", file=sys.stderr)
            return 1
        print(f"warpsim {args.command}: error: {type(error).__name__}: {one_line(error)}, raised by your code at "
              f"{where.filename}:{where.lineno} (--debug prints the traceback)", file=sys.stderr)
        return 2


def one_line(error: BaseException) -> str:
    """An error's message on one line (an OSError's or MemoryError's may have several)."""
    return " ".join(str(error).split()) or type(error).__name__


def users_frame(error: BaseException) -> traceback.FrameSummary | None:
    """Where a user's own code (e.g. their environment's step) raised ``error``: the innermost frame of
    its traceback outside Python's and installed libraries' files, when that frame is not warpsim's.
    None when it is warpsim's: the error is then a bug in warpsim."""
    own = [Path(folder) for package in (warpsim, warpsim.envs, warpsim.kernels) for folder in package.__path__]
    libraries = [Path(sysconfig.get_paths()[name]) for name in ("stdlib", "platstdlib", "purelib", "platlib")]
    for frame in reversed(traceback.extract_tb(error.__traceback__)):
        path = Path(frame.filename).resolve()
        if frame.filename.startswith("<") or any(path.is_relative_to(folder.resolve()) for folder in libraries):
            continue
        return None if any(path.is_relative_to(folder.resolve()) for folder in own) else frame
    return None


def build_parser() -> argparse.ArgumentParser:
    """The whole command line: one subparser per subcommand (the docs test parses the docs' commands)."""
    parser = argparse.ArgumentParser(prog="warpsim", description=plain_text(__doc__))
    parser.add_argument("--version", action=PrintVersion,
                        help="print warpsim's version and the commit it runs from, and exit")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true",
                        help="with an error, also print its traceback (e.g. of your environment's own code)")
    commands = parser.add_subparsers(dest="command", required=True)
    _add_bench(commands.add_parser(
        "bench", help="time the sim tier (steps/s) of an environment", parents=[common],
        description=plain_text(runner.__doc__), formatter_class=argparse.RawDescriptionHelpFormatter))
    _add_check(commands.add_parser(
        "check", help="step the kernels and the NumPy reference side by side and compare them", parents=[common],
        description=plain_text(sys.modules[check.__module__].__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter))
    subcommands.add_train(commands.add_parser(
        "train", help="train one policy per agent role with PPO", parents=[common],
        description=plain_text(train_loop.__doc__), formatter_class=argparse.RawDescriptionHelpFormatter))
    subcommands.add_evaluate(commands.add_parser(
        "evaluate", help="play a checkpoint for some episodes and report returns and counters (e.g. tags)",
        parents=[common]))
    subcommands.add_render(commands.add_parser(
        "render", help="draw one episode played by a checkpoint into a GIF", parents=[common]))
    subcommands.add_plot(commands.add_parser(
        "plot", help="draw runs' learning curves (a metric against steps and wall time, vs random play) into a PNG",
        parents=[common]))
    return parser


class PrintVersion(argparse.Action):
    """``--version``: asks git for the commit only when given."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs):
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(version_line())
        parser.exit()


def version_line() -> str:
    """``warpsim 0.2.0``, then the git commit of a checkout it runs from (with "modified" when files differ)."""
    commit = source_commit()
    if commit is None:
        return f"warpsim {warpsim.__version__}"
    return (f"warpsim {warpsim.__version__} (commit {commit['commit'][:12]}"
            f"{'' if commit['clean'] else ', modified'})")


def plain_text(docstring: str | None) -> str:
    """A docstring as --help shows it: Sphinx roles (:mod:`x`) and literals (``x``) become x."""
    return re.sub(r"``(.*?)``", r"\1", re.sub(r":[a-z]+:`([^`]*)`", r"\1", docstring or ""), flags=re.DOTALL)


GRAPH_CHOICES = ("off", "on", "both")


def _add_bench(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", choices=sorted(NAMED_CONFIGS) + sorted(NAMED_SWEEPS),
                        help="a named config or sweep of docs/benchmarks.md (other options override a config)")
    parser.add_argument("--values", type=_integer_list, metavar="V1,V2,...",
                        help="the points of a sweep instead of its own, e.g. --values 1,4,16")
    parser.add_argument("--env", help=f"environment id (registered: {', '.join(registered())}) "
                                      f"or package.module:Class")
    parser.add_argument("--num-envs", type=int, help="environments stepped together (E)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment parameter, e.g. --set num_runners=100 (repeatable)")
    parser.add_argument("--backend", default="auto", help="auto (default), cuda or numpy")
    parser.add_argument("--tier", action="append", choices=("sim",) + POLICY_TIERS,
                        help="what is timed (repeatable; default sim): sim = steps with fixed random actions, "
                             "sim+policy = rollouts with the policies acting, train = PPO iterations")
    parser.add_argument("--precision", action="append", choices=PRECISIONS,
                        help="network precision of the policy tiers (repeatable; default auto: bf16 on a GPU of "
                             "compute capability 8.0 or newer, fp32 on older GPUs and a CPU)")
    parser.add_argument("--graphs", choices=GRAPH_CHOICES, default="off",
                        help="off (default): every launch eager; on: each repeat replays its steps (sim) or rollout "
                             "(policy tiers) captured as one CUDA graph (GPU only); both: one record each")
    parser.add_argument("--compile", choices=COMPILE_SETTINGS,
                        help="policy tiers: the trainer's compile setting, as training's (default off, the eager "
                             "path; on: the policy step and the update compiled before the timing, the record "
                             "gives the seconds; auto: on with CUDA)")
    parser.add_argument("--gradient-kernels", choices=GRADIENT_KERNELS, nargs="?", const="on",
                        help="policy tiers on the fused path under bf16: the update's networks and their gradients "
                             "as warpsim's kernels, as training's gradient_kernels (default auto: on a Hopper GPU "
                             "with networks at most 64 wide; alone: on; loss: the loss computed in them too)")
    parser.add_argument("--compile-loss", action=RemovedOption, version="0.2.0",
                        replacement="--compile on compiles the whole minibatch step and the policy step")
    parser.add_argument("--no-baseline", action="store_true",
                        help="on a GPU, skip the NumPy backend run of the same config that is otherwise "
                             "timed next to each figure")
    parser.add_argument("--steps", type=int, default=100,
                        help="steps per timed repeat (default 100); in the policy tiers, the rollout length")
    parser.add_argument("--repeats", type=int, default=5, help="timed repeats (default 5)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps after start-up (default 10)")
    parser.add_argument("--max-seconds", type=float,
                        help="scale E down until the warm-up and timed steps of a run (a sweep point) fit in "
                             f"this time (default {runner.DEFAULT_MAX_SECONDS['numpy']:g} on numpy, "
                             "no limit on cuda; inf: no limit)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the starts and the random actions (default 0)")
    parser.add_argument("--results-dir", type=subcommands.directory_path,
                        help="append every record to DIR/<device>.json (default: print only, save nothing)")
    parser.add_argument("--no-save", action=RemovedOption, version="0.2.0",
                        replacement="bench saves nothing unless --results-dir DIR is given; drop --no-save")
    parser.set_defaults(run=_run_bench)


def _run_bench(args) -> int:
    if simulator_enabled() and resolve_placement(args.backend).backend == "cuda":
        raise InvalidValueError(f"--backend {args.backend} runs the kernels on the CUDA simulator here: it checks "
                         f"them, it is not timed (use a GPU, or --backend numpy)")
    if args.graphs != "off":
        runner.check_graphs(True, args.backend)  # before the eager run of --graphs both
    for given, option in ((args.compile is not None, "--compile"),
                          (args.gradient_kernels is not None, "--gradient-kernels")):
        if given and not set(args.tier or []) & set(POLICY_TIERS):
            raise InvalidValueError(f"{option} sets how the policy tiers run the networks; give it with --tier "
                                    f"sim+policy or --tier train")
    results_dir = args.results_dir
    if results_dir is not None:
        usable_directory(results_dir, "results directory")  # before the timing, not after it: one line
    options = dict(backend=args.backend, steps=args.steps, repeats=args.repeats, warmup_steps=args.warmup,
                   seed=args.seed, max_seconds=args.max_seconds, progress=runner.print_progress)
    if args.config in NAMED_SWEEPS:
        for option, given in (("--env", args.env), ("--set", args.set)):
            if given:
                raise InvalidValueError(f"{option} does not combine with --config {args.config}: a sweep runs the "
                                 f"config of docs/benchmarks.md (vary one with --config train-ref or headline)")
        records = (record for graphs in _graph_runs(args) for record in
                   run_sweep(NAMED_SWEEPS[args.config], args.values, args.num_envs, graphs=graphs, **options))
    elif args.values:
        raise InvalidValueError(f"--values gives the points of a sweep; use it with --config "
                         f"{' or '.join(sorted(NAMED_SWEEPS))}")
    else:
        records = _run_tiers(_bench_config(args), args, options)
    for record in records:
        print(runner.summary(record), flush=True)
        if results_dir is not None:
            print(f"appended to {runner.append_result(record, results_dir)}", flush=True)
    if results_dir is None:
        print(runner.NOT_SAVED, file=sys.stderr, flush=True)
    return 0


def _run_tiers(config: BenchConfig, args, options: dict):
    """Each asked tier (and precision), each followed on a GPU by the NumPy baseline and the ratio."""
    for tier in args.tier or ["sim"]:
        for precision in (["fp32"] if tier == "sim" else args.precision or ["auto"]):
            for graphs in _graph_runs(args):
                record = _run_tier(config, tier, precision, {**options, "graphs": graphs}, args.compile,
                                   args.gradient_kernels)
                yield record
            if record["backend"] == "cuda" and not args.no_baseline and not simulator_enabled():
                baseline = _run_tier(config, tier, precision,
                                     {**options, "backend": "numpy", "max_seconds": None, "graphs": False})
                yield baseline
                ratio = (record["agent_steps_per_second"]["median"]
                         / baseline["agent_steps_per_second"]["median"])
                print(f"{tier} {record['precision']} {record['launches']}: GPU / NumPy = {ratio:,.1f}x per agent-step",
                      flush=True)


def _graph_runs(args) -> list[bool]:
    """Whether each run of a config replays CUDA graphs, from --graphs."""
    return {"off": [False], "on": [True], "both": [False, True]}[args.graphs]


def _run_tier(config: BenchConfig, tier: str, precision: str, options: dict, compile: str | None = None,
              gradient_kernels: str | None = None) -> dict:
    if tier == "sim":
        return runner.run_sim(config, **options)
    policy_options = {**options, "warmup_steps": 1}
    return run_policy_tier(config, tier, precision=precision, compile=compile or TrainConfig.compile,
                           gradient_kernels=gradient_kernels or TrainConfig.gradient_kernels, **policy_options)


def _bench_config(args) -> BenchConfig:
    """The named config with the options' overrides; it keeps its name unless its parameters change."""
    named = NAMED_CONFIGS.get(args.config)
    env_id = args.env or (named.env if named else "tag_continuous")
    params = dict(named.params) if named and env_id == named.env else {}
    params.update(parse_env_settings(env_id, args.set))
    num_envs = args.num_envs if args.num_envs is not None else (named.num_envs if named else 64)
    name = named.name if named and env_id == named.env and params == named.params else None
    return BenchConfig(env_id, num_envs, params, name)


def _integer_list(text: str) -> list[int]:
    try:
        return [int(value) for value in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of integers, e.g. 1,4,16") from None


def _add_check(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("env", help=f"environment id (registered: {', '.join(registered())}) "
                                    f"or package.module:Class")
    parser.add_argument("--num-envs", type=int, default=2, help="environments stepped together (E, default 2)")
    parser.add_argument("--steps", type=int, default=None,
                        help="random steps after the reset (default: three episodes, 3 x the environment's "
                             "episode_length, or 64 if it has none)")
    parser.add_argument("--seed", type=int, default=0, help="seeds the starts and the random actions")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment parameter, e.g. --set num_runners=3 (repeatable)")
    parser.add_argument("--allow-near-ties", action="store_true",
                        help="list near-ties (differences the reference itself gives from inputs one ulp away) "
                             "and go on, instead of stopping at the first")
    parser.set_defaults(run=_run_check)


def _run_check(args) -> int:
    params = parse_env_settings(args.env, args.set)
    if not gpu_available() and not simulator_enabled():
        # The simulator must be chosen before numba is imported: run again in a process that has it.
        print("warpsim check: no CUDA GPU; running the kernels on the CUDA simulator", file=sys.stderr)
        portable = portable_id(args.env)  # the new process knows no id registered in this one
        command = [sys.executable, "-m", "warpsim.cli", *(portable if part == args.env else part for part in args.argv)]
        return subprocess.run(command, env={**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}).returncode
    report = check(args.env, args.num_envs, args.steps, args.seed, allow_near_ties=args.allow_near_ties,
                   progress=runner.print_progress, **params)
    print(report)
    return 0 if report.consistent else 1


if __name__ == "__main__":
    sys.exit(main())
