"""The layers of warpsim (docs/design.md): a module imports only from its own layer or the layers below it.

Imports are read from the source with ``ast`` (nothing is run): every ``import`` and
``from ... import``, at the top of a module, inside a function or under
``TYPE_CHECKING``. ``envs/`` and ``kernels/`` are installed as ``warpsim.envs`` and
``warpsim.kernels`` and are checked as such.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = {"warpsim": REPO / "warpsim", "warpsim.envs": REPO / "envs", "warpsim.kernels": REPO / "kernels"}
FACADE = "warpsim"
"""The package itself (warpsim/__init__.py): the public names, on the top layer."""

LAYERS = (
    # (layer, the modules and packages of warpsim on it), from the ground up
    ("helpers", {"errors", "files", "extras", "limits", "removed", "source_commit", "validation"}),
    ("device and drawing", {"device", "spec", "layout", "inputs", "render"}),
    ("the environment", {"binding", "environment", "checked_mode", "graph", "kernels"}),
    ("what environments are", {"roles", "actions", "configs", "registry", "envs"}),
    ("users of environments", {"check", "train", "adapters"}),
    ("after training", {"analysis"}),
    ("benchmarks", {"bench"}),
    ("the front door", {"cli", "commands", FACADE}),
)
SIDE_BY_SIDE = {"users of environments"}
"""Layers whose parts import nothing from one another."""


def unit_of(module: str) -> str:
    """The module or package of warpsim that ``module`` belongs to: warpsim.train.ppo -> train."""
    return FACADE if module == FACADE else module.split(".")[1]


def layer_of(module: str) -> int:
    unit = unit_of(module)
    return next(index for index, (_, units) in enumerate(LAYERS) if unit in units)


def module_sources() -> dict[str, str]:
    """Source text of every module of the installed package, by module name."""
    sources = {}
    for package, directory in PACKAGE_DIRS.items():
        for path in directory.rglob("*.py"):
            parts = list(path.relative_to(directory).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            sources[".".join([package, *parts])] = path.read_text()
    return sources


def _facade_names(sources: dict[str, str]) -> dict[str, str]:
    """Name -> the module it comes from, for the names warpsim/__init__.py imports."""
    return {alias.asname or alias.name: node.module
            for node in ast.walk(ast.parse(sources[FACADE]))
            if isinstance(node, ast.ImportFrom) and node.module
            for alias in node.names}


def imported_modules(module: str, sources: dict[str, str]) -> set[str]:
    """The modules of warpsim that ``module`` imports. A name taken from the package itself
    (``from warpsim import Environment``) counts as the module the package takes it from."""
    facade_names = _facade_names(sources)
    is_package = any(name.startswith(module + ".") for name in sources)
    imported: set[str] = set()
    for node in ast.walk(ast.parse(sources[module])):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[:len(module.split(".")) - node.level + is_package]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                if f"{base}.{alias.name}" in sources:
                    imported.add(f"{base}.{alias.name}")
                elif base == FACADE and alias.name in facade_names:
                    imported.add(facade_names[alias.name])
                else:
                    imported.add(base)
    return {name for name in imported if name == FACADE or name.startswith(FACADE + ".")}


def violations(sources: dict[str, str]) -> list[str]:
    """Every import that runs up the layers or across a side-by-side layer."""
    found = []
    for module in sorted(sources):
        layer = layer_of(module)
        for target in sorted(imported_modules(module, sources)):
            target_layer = layer_of(target)
            if target_layer > layer:
                found.append(f"{module} ({LAYERS[layer][0]}) imports {target} ({LAYERS[target_layer][0]})")
            elif (target_layer == layer and LAYERS[layer][0] in SIDE_BY_SIDE
                  and unit_of(target) != unit_of(module)):
                found.append(f"{module} imports {target}, side by side with it ({LAYERS[layer][0]})")
    return found


def test_every_module_is_on_a_layer():
    placed = set().union(*(units for _, units in LAYERS))
    assert {unit_of(module) for module in module_sources()} == placed


def test_modules_import_only_from_their_layer_or_below():
    assert violations(module_sources()) == []


def test_an_import_up_or_across_the_layers_is_found():
    sources = module_sources()
    planted = {
        "warpsim.adapters.planted": "from warpsim.train.config import TrainConfig\n",
        "warpsim.kernels.planted": "import warpsim.bench.runner\n",
        "warpsim.envs.planted": "def later():\n    from warpsim import evaluate\n",
        "warpsim.train.planted": "from ..bench import runner\n",
    }
    sources.update(planted)
    assert violations(sources) == [
        "warpsim.adapters.planted imports warpsim.train.config, side by side with it (users of environments)",
        "warpsim.envs.planted (what environments are) imports warpsim.analysis.evaluate (after training)",
        "warpsim.kernels.planted (the environment) imports warpsim.bench.runner (benchmarks)",
        "warpsim.train.planted (users of environments) imports warpsim.bench.runner (benchmarks)",
    ]


def test_no_adapter_imports_the_trainer():
    sources = module_sources()
    adapters = [module for module in sources if unit_of(module) == "adapters"]
    assert adapters
    for module in adapters:
        assert not {unit_of(target) for target in imported_modules(module, sources)} & {"train", FACADE}, module


def test_training_imports_nothing_from_the_benchmarks():
    sources = module_sources()
    trainer = [module for module in sources if unit_of(module) == "train"]
    assert trainer
    for module in trainer:
        assert "bench" not in {unit_of(target) for target in imported_modules(module, sources)}, module
