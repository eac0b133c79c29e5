"""Regenerates docs/benchmarks.md and its plots from benchmarks/results/*.json alone.

    pip install -e .[plots]      # matplotlib
    python benchmarks/report.py

Every number on the page comes from a record a benchmark script wrote; the prose is
benchmarks/report_template.md. Records may come from warpsim (``tool`` absent or
"warpsim") or from another tool run on the same configs ("warpdrive-cpu", "vmas",
"mpe2", ...); the template's "Record format" section lists the fields read.
"""

from __future__ import annotations

import argparse
import datetime
import json
import string
import sys
from pathlib import Path

from matplotlib.figure import Figure

from warpsim.bench.peers import ratio_table
from warpsim.bench.sweeps import NAMED_SWEEPS
from warpsim.configs import NAMED_CONFIGS

ROOT = Path(__file__).resolve().parent.parent
RESULTS_DIR = ROOT / "benchmarks" / "results"
DOCS_DIR = ROOT / "docs"
TEMPLATE = Path(__file__).with_name("report_template.md")
TABLE_CONFIGS = ("headline", "train-ref", "grid")
CPU_BASELINE_PREFIX = "cpu-baseline-N"
LAUNCHES = ("eager", "cuda-graph")
TIERS = ("sim", "sim+policy", "train")
PRECISIONS = ("fp32", "bf16", "fp64")
REQUIRED = ("date", "device", "num_envs", "num_agents", "agent_steps_per_second")


# ----- records ----------------------------------------------------------------------
def load_records(results_dir: Path) -> list[dict]:
    """Every record of every ``*.json`` in ``results_dir``, with defaults filled in."""
    records = []
    for path in sorted(Path(results_dir).glob("*.json")):
        for index, record in enumerate(json.loads(path.read_text())):
            records.append(_normalized(record, f"{path.name} record {index}"))
    return records


def _normalized(record: dict, where: str) -> dict:
    missing = [name for name in REQUIRED if name not in record]
    if missing:
        raise ValueError(f"{where} lacks {', '.join(missing)}; every record needs {', '.join(REQUIRED)}")
    record = {"tool": "warpsim", "tier": "sim", "precision": "fp32", "backend": "-", "launches": "eager",
              "requested_num_envs": record["num_envs"], **record}
    for name, allowed in (("tier", TIERS), ("precision", PRECISIONS), ("launches", LAUNCHES)):
        if record[name] not in allowed:
            raise ValueError(f"{where} has {name}={record[name]!r}; allowed: {', '.join(allowed)}")
    record["config"] = record.get("config") or _inferred_config(record)
    record["when"] = _parsed_date(record["date"])
    return record


def _inferred_config(record: dict) -> str | None:
    """The named config whose parameters a record without a ``config`` field has."""
    params = record.get("params", {})
    for name, config in NAMED_CONFIGS.items():
        if record.get("env") == config.env and all(params.get(k) == v for k, v in config.params.items()):
            return name
    return None


def _parsed_date(text: str) -> datetime.datetime:
    when = datetime.datetime.fromisoformat(text)
    return when if when.tzinfo else when.replace(tzinfo=datetime.timezone.utc)


def rate(record: dict) -> float:
    """Median agent-steps/s (a record may give the median alone, as a number)."""
    value = record["agent_steps_per_second"]
    return value["median"] if isinstance(value, dict) else value


def on_gpu(record: dict) -> bool:
    backend = record["backend"].lower()
    return "cuda" in backend or "gpu" in backend


def series_of(record: dict) -> tuple:
    """What one line of a plot (one group of a table) holds fixed."""
    return record["tool"], record["backend"], record["tier"], _precision(record), record["device"]


def _precision(record: dict) -> str:
    """The precision, and the launches where they are CUDA graphs (eager is the default)."""
    return record["precision"] + (" cuda-graph" if record["launches"] == "cuda-graph" else "")


def latest(records: list[dict], size: str | None = None) -> list[dict]:
    """The newest record per series and config (and per value of ``size``, for sweeps)."""
    chosen = {}
    for record in records:
        key = (series_of(record), record["config"], record[size] if size else None)
        if key not in chosen or record["when"] > chosen[key]["when"]:
            chosen[key] = record
    return list(chosen.values())


def _nearest_in_time(record: dict, candidates: list[dict]) -> dict | None:
    return min(candidates, key=lambda other: abs(other["when"] - record["when"]), default=None)


def numpy_baseline(record: dict, records: list[dict]) -> dict | None:
    """warpsim's NumPy record of the same config and tier, nearest in time to ``record``."""
    return _nearest_in_time(record, [
        other for other in records if other["tool"] == "warpsim" and other["backend"] == "numpy"
        and other["config"] == record["config"] and other["tier"] == record["tier"]])


def warpsim_gpu(record: dict, records: list[dict]) -> dict | None:
    """warpsim's GPU record of the same config and tier, nearest in time to ``record``."""
    return _nearest_in_time(record, [
        other for other in records if other["tool"] == "warpsim" and on_gpu(other)
        and other["config"] == record["config"] and other["tier"] == record["tier"]])


# ----- text -------------------------------------------------------------------------
def _si(value: float) -> str:
    for factor, prefix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:.3g} {prefix}"
    return f"{value:.3g}"


def _seconds(value: float) -> str:
    for factor, unit in ((1, "s"), (1e-3, "ms"), (1e-6, "us")):
        if value >= factor:
            return f"{value / factor:.3g} {unit}"
    return f"{value * 1e9:.3g} ns"


def _ratio(value: float) -> str:
    return f"{value:,.0f}x" if value >= 100 else f"{value:.3g}x"


def _num_envs(record: dict) -> str:
    run, requested = record["num_envs"], record["requested_num_envs"]
    return str(run) if run == requested else f"{run} of {requested}"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def _table_order(record: dict) -> tuple:
    return (TABLE_CONFIGS.index(record["config"]), TIERS.index(record["tier"]), record["tool"] != "warpsim",
            not on_gpu(record), record["backend"], record["precision"], record["device"])


def config_table(records: list[dict]) -> str:
    """The named configs: each series' newest figure, its ratio to the NumPy baseline and to warpsim's GPU."""
    rows = []
    for record in sorted((r for r in latest(records) if r["config"] in TABLE_CONFIGS), key=_table_order):
        baseline, gpu = numpy_baseline(record, records), warpsim_gpu(record, records)
        versus_numpy = ("baseline" if baseline is record else
                        _ratio(rate(record) / rate(baseline)) if baseline else "-")
        versus_warpsim = _ratio(rate(gpu) / rate(record)) if gpu and record["tool"] != "warpsim" else "-"
        env_rate = record.get("env_steps_per_second")
        env_rate = env_rate["median"] if isinstance(env_rate, dict) else env_rate
        rows.append([record["config"], record["tool"], record["backend"], record["tier"], _precision(record),
                     record["device"], _num_envs(record), str(record["num_agents"]), _si(rate(record)),
                     _si(env_rate) if env_rate else "-", versus_numpy, versus_warpsim, record["date"][:10]])
    if not rows:
        return "No records of the named configs yet."
    return _table(["config", "tool", "backend", "tier", "precision", "device", "E", "N", "agent-steps/s",
                   "env-steps/s", "vs NumPy baseline", "warpsim GPU / this", "date"], rows)


def fraction_of_memory_floor(record: dict) -> float:
    """The run's fraction of its memory floor, from the seconds every record's ``floor`` carries."""
    floor = record["floor"]
    return floor["memory_floor_seconds_per_env_step"] / floor["run_seconds_per_env_step"]


def floor_table(records: list[dict]) -> str:
    """The floors of each newest named-config record that carries them: memory and compute apart."""
    rows = []
    for record in sorted((r for r in latest(records) if r["config"] in TABLE_CONFIGS and "floor" in r),
                         key=_table_order):
        floor = record["floor"]
        rows.append([record["config"], f"{record['tool']} {record['backend']}", record["tier"], _precision(record),
                     record["device"], _num_envs(record), str(record["num_agents"]),
                     _si(floor["bytes_per_env_step"]) + "B", _si(floor["flops_per_env_step"]),
                     _si(floor["copy_bandwidth_gb_per_s"] * 1e9) + "B/s",
                     _si(floor["fp32_gflop_per_s"] * 1e9) + "FLOP/s",
                     _seconds(floor["memory_floor_seconds_per_env_step"]),
                     _seconds(floor["compute_floor_seconds_per_env_step"]),
                     _seconds(floor["run_seconds_per_env_step"]), f"{100 * fraction_of_memory_floor(record):.3g} %"])
    if not rows:
        return "No records with floor fields yet."
    return _table(["config", "run", "tier", "precision", "device", "E", "N", "bytes / env-step",
                   "brute-force FLOPs / env-step", "copy bandwidth", "FP32 rate", "memory floor",
                   "brute-force compute floor", "measured", "of the memory floor"], rows)


def cpu_baseline_table(records: list[dict]) -> str:
    """warpsim's NumPy backend against today's tools, per N, from the newest ``cpu_baseline.py`` run."""
    chosen = [r for r in latest(records) if str(r["config"]).startswith(CPU_BASELINE_PREFIX)]
    if not chosen:
        return "No CPU baseline records yet."
    return ratio_table(chosen)


def missing_gpu_figures(records: list[dict]) -> list[str]:
    """Named configs and sweeps without a single warpsim GPU record."""
    with_gpu = {r["config"] for r in records if r["tool"] == "warpsim" and on_gpu(r)}
    return [name for name in (*TABLE_CONFIGS, *NAMED_SWEEPS) if name not in with_gpu]


# ----- plots ------------------------------------------------------------------------
def _sweep_title(sweep) -> str:
    if sweep.swept == "num_envs":
        held = f"N={sweep.base.params['num_taggers'] + sweep.base.params['num_runners']}"
    else:
        held = f"E={sweep.base.num_envs}"
    return f"{sweep.name}: {sweep.base.env}, {held}, partial K={sweep.base.params['num_other_agents_observed']}"


def _plot_series(axes, points: list[dict], size: str, value) -> set:
    """One line per series on ``axes``; returns the devices drawn."""
    devices = set()
    for series in sorted({series_of(r) for r in points}):
        line = sorted((r for r in points if series_of(r) == series), key=lambda r: r[size])
        tool, backend, tier, precision, device = series
        axes.plot([r[size] for r in line], [value(r) for r in line], marker="o",
                  label=f"{tool} {backend} {tier} {precision} on {device}")
        devices.add(device)
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=7)
    return devices


def plot_sweep(records: list[dict], sweep, path: Path) -> bool:
    """Agent-steps/s against the swept size, log-log; False (and no file) without records."""
    points = [r for r in latest(records, sweep.swept) if r["config"] == sweep.name]
    if not points:
        return False
    figure = Figure(figsize=(7.5, 4.8), layout="constrained")
    axes = figure.subplots()
    devices = _plot_series(axes, points, sweep.swept, rate)
    axes.set_xlabel(f"{sweep.symbol} ({'environments' if sweep.symbol == 'E' else 'agents per environment'})")
    axes.set_ylabel("agent-steps/s (median)")
    axes.set_title(f"{_sweep_title(sweep)}\non {', '.join(sorted(devices))}", fontsize=9)
    _save(figure, path)
    return True


def plot_floor(records: list[dict], path: Path) -> bool:
    """Fraction of the memory floor reached along each sweep; False (and no file) without records."""
    panels = [(sweep, [r for r in latest(records, sweep.swept) if r["config"] == sweep.name and "floor" in r])
              for sweep in NAMED_SWEEPS.values()]
    panels = [(sweep, points) for sweep, points in panels if points]
    if not panels:
        return False
    figure = Figure(figsize=(7.5, 4.2 * len(panels)), layout="constrained")
    for axes, (sweep, points) in zip(figure.subplots(len(panels), 1, squeeze=False)[:, 0], panels):
        devices = _plot_series(axes, points, sweep.swept, fraction_of_memory_floor)
        axes.set_xlabel(sweep.symbol)
        axes.set_ylabel("fraction of the memory floor")
        axes.set_title(f"{_sweep_title(sweep)}\non {', '.join(sorted(devices))}", fontsize=9)
    _save(figure, path)
    return True


def _save(figure: Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110, bbox_inches="tight")


# ----- the page ---------------------------------------------------------------------
def render(results_dir: Path = RESULTS_DIR, docs_dir: Path = DOCS_DIR) -> Path:
    """Writes ``docs_dir/benchmarks.md`` and its PNGs under ``docs_dir/benchmarks/``; returns the page.

    Records of benchmarks/placement.py (a ``placement`` field: networks of other widths, and
    other devices for them) are left out, and counted on the page; docs/training.md reports them."""
    every_record = load_records(results_dir)
    records = [record for record in every_record if "placement" not in record]
    images = Path(docs_dir) / "benchmarks"
    sweeps = {}
    for sweep in NAMED_SWEEPS.values():
        name = f"{sweep.name}.png"
        drawn = plot_sweep(records, sweep, images / name)
        sweeps[sweep.symbol] = (f"![{sweep.name}](benchmarks/{name})" if drawn
                                else f"No {sweep.name} records yet.")
    floor_plot = ("![fraction of the memory floor](benchmarks/floor.png)" if plot_floor(records, images / "floor.png")
                  else "No sweep records with floor fields yet.")
    missing = missing_gpu_figures(records)
    sources = sorted({path.name for path in Path(results_dir).glob("*.json")})
    page = string.Template(TEMPLATE.read_text()).substitute(
        sources=", ".join(f"`{name}`" for name in sources) or "no files",
        record_count=len(records),
        all_record_count=len(every_record),
        placement_count=len(every_record) - len(records),
        config_table=config_table(records),
        cpu_table=cpu_baseline_table(records),
        sweep_E=sweeps["E"],
        sweep_N=sweeps["N"],
        floor_table=floor_table(records),
        floor_plot=floor_plot,
        missing_gpu=("No GPU figures yet for: " + ", ".join(missing) + "." if missing
                     else "Every named config and sweep has GPU figures."),
    )
    path = Path(docs_dir) / "benchmarks.md"
    path.write_text(page)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR, help="where the *.json records are")
    parser.add_argument("--docs-dir", type=Path, default=DOCS_DIR,
                        help="where benchmarks.md and benchmarks/*.png are written")
    args = parser.parse_args(argv)
    print(f"wrote {render(args.results_dir, args.docs_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
