"""The ``warpsim train``, ``evaluate``, ``render`` and ``plot`` subcommands."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable
from pathlib import Path

import torch

from warpsim.analysis.evaluate import EPISODES, NUM_ENVS, PLAYS, SEED, RunEvaluation, evaluate_run, load_run
from warpsim.analysis.evaluate_experiment import ExperimentEvaluation, evaluate_experiment
from warpsim.analysis.play import Player
from warpsim.analysis.plot import plot_experiment, plot_runs
from warpsim.analysis.render import EPISODE_FILE, play_episode, write_gif
from warpsim.device import resolve_placement
from warpsim.errors import InvalidValueError, WarpsimError
from warpsim.files import usable_directory, write_output
from warpsim.registry import layout, parse_env_settings
from warpsim.train import checkpoint, opponents
from warpsim.train.config import TrainConfig, build_config, field_docs, read_config_file, saved_config
from warpsim.train.experiment import (
    ExperimentDirectory,
    check_sweep,
    is_experiment,
    parse_seeds,
    parse_sweep,
    seeds_from_file,
)
from warpsim.train.loop import default_run_dir, train, train_experiment
from warpsim.train.presets import GPU_NUM_ENVS, PRESETS, sized_for_gpu
from warpsim.train.run_dir import output_file

NOT_FLAGS = ("env_params", "opponents")

def add_train(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", choices=sorted(PRESETS), help="a named config to start from")
    parser.add_argument("--config-file", type=Path, help="settings from a .json or .toml file")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="an environment parameter, e.g. --set num_runners=100 (repeatable)")
    parser.add_argument("--opponent", action="append", default=[], metavar="ROLE=KIND",
                        help="a role that does not learn: ROLE=random (uniform play), ROLE=checkpoint:RUN_DIR "
                             "(that run's policy, frozen) or ROLE=self (learn; the default) (repeatable)")
    parser.add_argument("--seeds", metavar="SEEDS",
                        help="train an experiment of several runs batched together: a count (8: seeds 0-7), a "
                             "range (0-4) or a list (3,5,9); docs/experiments.md")
    parser.add_argument("--sweep", action="append", default=[], metavar="NAME=V1,V2",
                        help="also cross the seeds with these values of a config field or environment parameter, "
                             "e.g. --sweep learning_rate=3e-4,1e-3 (repeatable: the product of all)")
    parser.add_argument("--run-dir", type=directory_path,
                        help="where the run (or the experiment's runs) is written (default runs/<env>-<date>-<time>)")
    parser.add_argument("--resume", action="store_true",
                        help="continue the run or experiment in --run-dir from its checkpoints (its config is "
                             "reused)")
    parser.add_argument("--quiet", action="store_true",
                        help="no progress display (the run directory is still printed at the end)")
    parser.add_argument("--wandb", metavar="PROJECT",
                        help="also log the metrics and the config to this Weights & Biases project, an experiment's "
                             "runs one W&B run each, grouped by the experiment (needs the wandb extra; "
                             "WANDB_MODE=offline logs without an account)")
    parser.add_argument("--tensorboard", action=argparse.BooleanOptionalAction,
                        help="also log the metrics to RUN_DIR/tensorboard (default: when the tensorboard package is "
                             "installed; --tensorboard without it is an error)")
    fields = parser.add_argument_group("config fields (override the config and the file)")
    docs = field_docs()
    for item in dataclasses.fields(TrainConfig):
        if item.name in NOT_FLAGS:
            continue
        flag = "--" + item.name.replace("_", "-")
        help_text = f"{docs[item.name]} (default {item.default!r})"
        if item.type in ("bool", bool):
            fields.add_argument(flag, dest=item.name, action=argparse.BooleanOptionalAction, help=help_text)
        else:
            fields.add_argument(flag, dest=item.name, type=_parser_for(item), help=help_text,
                                metavar=item.name.upper())
    parser.set_defaults(run=run_train)


def _parser_for(item: dataclasses.Field):
    kind = type(item.default) if item.default is not None else float
    if item.name == "value_clip":
        return lambda text: None if text.lower() == "none" else float(text)
    return kind


def run_train(args) -> int:
    flags = {item.name: getattr(args, item.name) for item in dataclasses.fields(TrainConfig)
             if item.name not in NOT_FLAGS and getattr(args, item.name) is not None}
    if args.wandb is not None and not args.wandb.strip():
        raise InvalidValueError("--wandb '': the Weights & Biases project name is empty; give one, e.g. --wandb "
                                "tag-study")
    if args.resume:
        ignored = (sorted(set(flags) - {"iterations"}) + (["--set"] if args.set else [])
                   + (["--opponent"] if args.opponent else []))
        if args.config or args.config_file or ignored:
            raise InvalidValueError("--resume continues a run with its saved config; only --iterations may be "
                             f"given with it (got {', '.join(ignored) or '--config/--config-file'})")
        if args.seeds is not None or args.sweep:
            raise InvalidValueError("--resume continues an experiment with its own seeds and sweep; leave out "
                                    "--seeds and --sweep")
        loggers = dict(progress=None if args.quiet else sys.stderr, wandb=args.wandb, tensorboard=args.tensorboard)
        if is_experiment(args.run_dir):
            train_experiment(None, args.run_dir, resume=True, iterations=flags.get("iterations"), **loggers)
            print_experiment_next_steps(args.run_dir)
            return 0
        trainer = train(None, args.run_dir, resume=True, iterations=flags.get("iterations"), **loggers)
        print_next_steps(trainer.world.is_writer, args.run_dir)
        return 0
    layers = [PRESETS[args.config]] if args.config else []
    experiment: dict = {}
    if args.config_file:
        settings = read_config_file(args.config_file)
        experiment = {key: settings.pop(key) for key in ("seeds", "sweep") if key in settings}
        layers.append(settings)
    layers.append(flags)
    layers.append({"opponents": dict(opponents.parse_setting(text) for text in args.opponent)})
    env_id = next((layer["env"] for layer in reversed(layers) if "env" in layer), TrainConfig.env)
    layers.append({"env_params": parse_env_settings(env_id, args.set)})
    config = build_config(*layers)
    _check_flags(args, flags, config)
    _note_gpu_preset(args.config, config)
    run_dir = args.run_dir or default_run_dir(config)
    if args.seeds is not None or args.sweep or experiment:
        file_seeds = f"{args.config_file}: seeds"
        seeds = (parse_seeds(args.seeds) if args.seeds is not None else seeds_from_file(experiment["seeds"], file_seeds)
                 if "seeds" in experiment else (config.seed,))
        sweep = {**check_sweep(experiment.get("sweep", {}), config.env, f"{args.config_file}: [sweep]"),
                 **parse_sweep(args.sweep, config.env)}
        train_experiment(config, run_dir, seeds=seeds, sweep=sweep, progress=None if args.quiet else sys.stderr,
                         wandb=args.wandb, tensorboard=args.tensorboard)
        print_experiment_next_steps(run_dir)
        return 0
    trainer = train(config, run_dir, progress=None if args.quiet else sys.stderr, wandb=args.wandb,
                    tensorboard=args.tensorboard)
    print_next_steps(trainer.world.is_writer, run_dir)
    return 0


def _check_flags(args, flags: dict, config: TrainConfig) -> None:
    """Flags that another flag makes meaningless are an error naming both; the rule that --env drops
    a preset's environment parameters is said when it applies."""
    if args.seeds is not None and "seed" in flags:
        raise InvalidValueError(f"--seed {flags['seed']} and --seeds {args.seeds} both choose the seed; give the "
                                f"seeds with --seeds alone (e.g. --seeds {flags['seed']}-{flags['seed'] + 1})")
    if "policy_head" in flags and not layout(config.env, 1, **config.env_params)[0].continuous:
        raise InvalidValueError(f"--policy-head {flags['policy_head']} chooses the distribution of continuous "
                                f"actions, and {config.env}'s actions are discrete; leave it out")
    preset = PRESETS.get(args.config or "", {})
    if "env" in flags and preset.get("env_params") and preset["env"] != flags["env"]:
        print(f"note: --env {flags['env']} replaces --config {args.config}'s environment ({preset['env']}), and so "
              f"its environment parameters too; give {flags['env']}'s own with --set", file=sys.stderr)


def _note_gpu_preset(name: str | None, config: TrainConfig) -> None:
    """Says so when a preset sized for a GPU is about to train at its size with its environments on the CPU."""
    if not name or not sized_for_gpu(name) or config.num_envs < GPU_NUM_ENVS:
        return
    if resolve_placement(config.backend).backend != "numpy":
        return
    spec = layout(config.env, 1, **config.env_params)[0]
    cpu_presets = ", ".join(preset for preset in PRESETS if not sized_for_gpu(preset))
    print(f"note: {name} is sized for a GPU, and its {config.num_envs} environments of {spec.num_agents} agents "
          f"will step in NumPy on the CPU, many times slower than on a GPU; the presets sized for a CPU are "
          f"{cpu_presets} (or lower --num-envs)", file=sys.stderr)


def print_next_steps(is_writer: bool, run_dir: Path) -> None:
    """Where the run is, and the commands that look at it (on stdout, with --quiet too; once under torchrun)."""
    if is_writer:
        print(f"run directory: {run_dir}\n"
              f"next: warpsim evaluate {run_dir}  |  warpsim plot {run_dir}  |  warpsim render {run_dir}")


def print_experiment_next_steps(directory: Path) -> None:
    """Where the experiment is, and the commands that look at it (on stdout, with --quiet too)."""
    print(f"experiment directory: {directory}\n"
          f"next: warpsim evaluate {directory}  |  warpsim plot {directory}  |  warpsim render {directory}/RUN")


def add_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", type=Path, help="a run directory, a checkpoint file, or an experiment directory "
                                                  "(every run, and each setting over its seeds)")
    parser.add_argument("--episodes", type=positive_int, default=EPISODES,
                        help=f"episodes to finish, at least: every environment finishes as many (default {EPISODES}, "
                             f"over {NUM_ENVS} environments {-(-EPISODES // NUM_ENVS)} each)")
    parser.add_argument("--measure", metavar="NAME",
                        help="an experiment's figure aggregated over seeds: a per-episode mean of the first play, "
                             "e.g. tags_per_episode (default: the return of the first learning role)")
    parser.add_argument("--num-envs", type=positive_int, default=NUM_ENVS,
                        help=f"environments played together (default {NUM_ENVS})")
    parser.add_argument("--random", action="append", default=[], metavar="ROLE",
                        help="this role acts uniformly at random instead (repeatable)")
    only = parser.add_mutually_exclusive_group()
    only.add_argument("--sample", dest="plays", action="store_const", const=("sampled",),
                      help="only sampled play (default: sampled, then greedy)")
    only.add_argument("--greedy", dest="plays", action="store_const", const=("greedy",),
                      help="only greedy play, the most likely actions (default: sampled, then greedy)")
    parser.add_argument("--compare-random", action=argparse.BooleanOptionalAction, default=True,
                        help="also play every role uniformly at random on the same seeds, and print each play's "
                             "ratios to it (default: on)")
    parser.add_argument("--json", type=file_path, metavar="FILE",
                        help="also write every figure, the run's config, these settings, the device and the "
                             "warpsim commit to FILE")
    experiment = parser.add_argument_group("an experiment's settings compared")
    experiment.add_argument("--baseline", metavar="SETTING",
                            help="compare each setting against this one, as printed, e.g. entropy_coef=0 (default: "
                                 "every pair)")
    experiment.add_argument("--lower-is-better", action="store_true",
                            help="the measure is better lower, e.g. episode_length for taggers (default: higher)")
    experiment.add_argument("--csv", type=file_path, metavar="FILE",
                            help="also write every figure of every play, per run and per setting with its "
                                 "aggregates and intervals, to FILE")
    _add_playing_options(parser)
    parser.set_defaults(run=run_evaluate, plays=tuple(PLAYS))


def run_evaluate(args) -> int:
    if args.json is not None:  # before the episodes are played
        output_file(args.json, "evaluation file", ".json")
    if args.csv is not None:
        output_file(args.csv, "evaluation table", ".csv")
    settings = dict(num_envs=args.num_envs, random_roles=tuple(args.random), plays=args.plays,
                    compare_random=args.compare_random, seed=args.seed, backend=args.backend,
                    env_params=_env_changes(args))
    result: RunEvaluation | ExperimentEvaluation
    if is_experiment(args.source):
        result = evaluate_experiment(args.source, args.episodes, measure=args.measure,
                                     lower_is_better=args.lower_is_better, baseline=args.baseline,
                                     progress=sys.stderr, **settings)
    else:
        given = [flag for flag, value in (("--measure", args.measure), ("--baseline", args.baseline),
                                          ("--lower-is-better", args.lower_is_better), ("--csv", args.csv)) if value]
        if given:
            raise InvalidValueError(f"{given[0]} compares an experiment's runs, and {args.source} is not an "
                                    f"experiment (no experiment.json); leave it out")
        result = evaluate_run(args.source, args.episodes, **settings)
    print(result)
    if args.json is not None:
        print(f"wrote {result.write_json(args.json)}")
    if isinstance(result, ExperimentEvaluation) and args.csv is not None:
        print(f"wrote {result.write_csv(args.csv)}")
    return 0


def add_render(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", type=Path, help="a run directory or a checkpoint file")
    parser.add_argument("--out", type=file_path,
                        help=f"the .gif to write (default RUN_DIR/{EPISODE_FILE}, beside a checkpoint file given)")
    parser.add_argument("--fps", type=positive_int, default=10, help="frames per second (default 10)")
    parser.add_argument("--max-steps", type=positive_int, default=1000, help="longest episode drawn (default 1000)")
    parser.add_argument("--sample", action="store_true", help="sample actions instead of taking the most likely")
    _add_playing_options(parser)
    parser.set_defaults(run=run_render)


def run_render(args) -> int:
    source = Path(args.source)
    if is_experiment(source):
        first = ExperimentDirectory(source, resume=True).planned_runs()[0].name
        raise InvalidValueError(f"{source} is an experiment: render one of its runs, e.g. {source / first}")
    out = output_file(args.out or (source if source.is_dir() else source.parent) / EPISODE_FILE, "output",
                      ".gif")  # before the episode is played
    env, policies, config = load_run(args.source, 1, backend=args.backend, seed=args.seed,
                                     env_params=_env_changes(args))
    player = Player(env, policies, greedy=not args.sample, random_roles=opponents.random_roles(config.opponents),
                    stack_observations=config.stack_observations, seed=args.seed)
    frames = play_episode(player, max_steps=args.max_steps)
    print(f"wrote {len(frames)} frames to {write_gif(frames, env, out, fps=args.fps)}")
    return 0


def add_plot(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_DIR",
                        help="training runs to draw, or one experiment directory (a curve per setting)")
    parser.add_argument("--metric", help="a metrics.jsonl key, e.g. episode_length (default: the first counter "
                                         "per episode, e.g. tags_per_episode, else the return of the first role "
                                         "that learns)")
    parser.add_argument("--out", type=file_path,
                        help="the .png to write (default RUN_DIR/<metric>.png of the first run)")
    parser.add_argument("--baseline-episodes", type=int, default=EPISODES,
                        help=f"episodes of uniformly random play for the dashed baseline, played as warpsim evaluate "
                             f"plays it (0: none; default {EPISODES})")
    parser.set_defaults(run=run_plot)


def run_plot(args) -> int:
    out = args.out or args.run_dirs[0] / f"{args.metric or 'learning_curve'}.png"
    experiments = [path for path in args.run_dirs if is_experiment(path)]
    if experiments and len(args.run_dirs) > 1:
        raise InvalidValueError(f"{experiments[0]} is an experiment: plot it alone (its runs are drawn together), "
                                f"or give run directories only")
    draw = plot_experiment if experiments else plot_runs
    print(f"wrote {draw(args.run_dirs[0] if experiments else args.run_dirs, out, args.metric, args.baseline_episodes)}")
    return 0


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (argparse reports anything else as a usage error)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not allowed; give an integer >= 1")
    return value


def torch_device(text: str) -> str:
    """An argparse type: a torch device that is here, ``cpu`` or ``cuda[:N]`` with that GPU, as torch names it."""
    try:
        device = torch.device(text)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise argparse.ArgumentTypeError(f"{text!r} is not allowed; give cpu, cuda or cuda:N")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if device.type == "cuda" and (device.index or 0) >= gpus:
        raise argparse.ArgumentTypeError(f"{text!r} is not here: torch sees {gpus} CUDA GPU(s); give cpu")
    return str(device)


def add_results_dir(parser: argparse.ArgumentParser) -> None:
    """``--results-dir DIR`` of a benchmark script: where its records are appended (``bench.runner.keep_result``),
    a directory checked as the arguments are read, before anything is timed (a usage error, as a script's other
    arguments'); without it, nothing is saved."""
    parser.add_argument("--results-dir", type=results_directory,
                        help="append every record to DIR/<device>.json (default: print only, save nothing)")


def results_directory(text: str) -> Path:
    """An argparse type: a directory that records can be appended to (``usable_directory``; created later)."""
    try:
        return usable_directory(directory_path(text), "results directory")
    except WarpsimError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def file_path(text: str) -> Path:
    """An argparse type: a file path, not empty (which would mean the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not allowed; give a file name")
    return Path(text)


def json_output(what: str) -> Callable[[str], Path]:
    """An argparse type: a .json file for ``what`` (``output``)."""
    return output(what, ".json")


def table_script(table: Callable[[], str], description: str, what: str, argv: list[str] | None = None) -> int:
    """A script that makes a Markdown table: ``[OUTPUT.md]`` read and checked (``output``) before ``table()``
    runs; the table printed, and written to OUTPUT.md too, atomically."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("output", nargs="?", type=output(what, ".md"), help=f"also write the {what} to this file")
    args = parser.parse_args(argv)
    report = table()
    print(report, end="")
    if args.output:
        write_output(args.output, report.encode(), what)
    return 0


def output(what: str, suffix: str) -> Callable[[str], Path]:
    """An argparse type: a file for ``what``, its name ending in ``suffix``, that is none of the files a run
    or an experiment is made of (``run_dir.output_file``), refused when the arguments are read, before
    anything runs."""

    def checked(text: str) -> Path:
        try:
            return output_file(text, what, suffix)
        except WarpsimError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return checked


def directory_path(text: str) -> Path:
    """An argparse type: a directory path, not empty (which would mean the current directory)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path is not allowed; give a directory, e.g. runs/my-run")
    return Path(text)


def _add_playing_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=SEED, help=f"seeds the starts and any sampling (default {SEED})")
    parser.add_argument("--backend", default="auto", help="auto (default), cuda or numpy")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                        help="change an environment parameter that keeps the shapes, e.g. --set episode_length=200")


def _env_changes(args) -> dict:
    """The --set parameters, parsed for the environment of the run in ``args.source``."""
    if not args.set:
        return {}
    if is_experiment(args.source):
        return parse_env_settings(ExperimentDirectory(args.source, resume=True).planned_runs()[0].config.env, args.set)
    return parse_env_settings(saved_config(checkpoint.load(args.source)).env, args.set)

