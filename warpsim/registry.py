"""Environment ids and ``make``: one registry for every backend.

An environment is named by a registered id (``register``), by an id an installed
package declares in the ``warpsim.envs`` entry-point group (``name = "package.module:Class"``,
imported the first time the id is asked for), or by ``package.module:Class`` itself.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import os
import sys
from importlib import metadata
from typing import Any

from warpsim.environment import Environment
from warpsim.errors import InvalidTypeError, InvalidValueError, UnavailableError, WarpsimError
from warpsim.layout import Layout

RUNTIME_OPTIONS = ("backend", "device", "seed", "checked", "streams")
ENTRY_POINT_GROUP = "warpsim.envs"
"""Installed packages declare their environments here: id = "package.module:Class"."""
_registry: dict[str, type[Environment]] = {}


def register(env_id: str, env_class: type[Environment]) -> None:
    """Makes ``env_class`` available to ``make`` as ``env_id``; refuses duplicates."""
    if not isinstance(env_id, str) or not env_id:
        raise InvalidValueError(f"environment id {env_id!r} is not allowed; give a non-empty string")
    if not (isinstance(env_class, type) and issubclass(env_class, Environment)):
        raise InvalidTypeError(f"cannot register {env_class!r} as '{env_id}': it is not a subclass of "
                        f"warpsim.Environment")
    _with_params(env_class, f"environment '{env_id}'")
    if env_id in _registry:
        raise InvalidValueError(f"environment id '{env_id}' is already registered (to "
                         f"{_registry[env_id].__name__}); pick another id")
    _registry[env_id] = env_class


def registered() -> tuple[str, ...]:
    """The ids ``make`` accepts, sorted: registered ones and those installed packages declare."""
    return tuple(sorted(set(_registry) | set(_declared())))


def env_class(env: str | type[Environment]) -> type[Environment]:
    """The class behind an id, a ``package.module:Class`` (or the class itself)."""
    if isinstance(env, str):
        if env in _registry:
            return _registry[env]
        if ":" in env:
            return _with_params(_import_class(env), f"environment {env!r}")
        declared = _declared().get(env)
        if declared is None:
            raise InvalidValueError(f"unknown environment '{env}'; registered: {', '.join(registered())} "
                                    f"(or give package.module:Class)")
        _registry[env] = _with_params(_load_declared(env, declared), f"environment '{env}'")
        return _registry[env]
    if isinstance(env, type) and issubclass(env, Environment):
        return _with_params(env, f"environment class {env.__qualname__}")
    raise InvalidTypeError(f"make() takes an environment id or a warpsim.Environment subclass, got {env!r}")


def _with_params(cls: type[Environment], where: str) -> type[Environment]:
    """``cls``, once it is known to declare its parameters as a dataclass (``make`` reads its fields)."""
    params = getattr(cls, "Params", None)
    if not (isinstance(params, type) and dataclasses.is_dataclass(params)):
        raise InvalidTypeError(f"{where} ({cls.__module__}.{cls.__qualname__}) has Params={params!r}; an "
                               f"environment declares its parameters as a dataclass, Params = MyParams "
                               f"(docs/custom_envs.md)")
    return cls


def portable_id(env: str) -> str:
    """An id that a new Python process resolves to the same class as ``env`` does here.

    An id ``register`` was given in this process is unknown to a new one: it becomes the
    class's ``package.module:Class`` where that imports it; otherwise an InvalidValueError
    says why the id cannot travel and what to give instead.
    """
    if env not in _registry:
        return env
    cls = _registry[env]
    path = f"{cls.__module__}:{cls.__qualname__}"
    try:
        travels = cls.__module__ != "__main__" and _import_class(path) is cls
    except WarpsimError:
        travels = False
    if not travels:
        raise InvalidValueError(f"environment '{env}' was registered in this process, and the command runs in a "
                                f"new one, which cannot see it ({path} cannot be imported there); give the "
                                f"class as package.module:Class from an importable module, or declare the id "
                                f"in the '{ENTRY_POINT_GROUP}' entry-point group")
    return path


def _declared() -> dict[str, metadata.EntryPoint]:
    """The ids installed packages declare, by id (nothing is imported)."""
    return {entry.name: entry for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _load_declared(env_id: str, entry: metadata.EntryPoint) -> type[Environment]:
    distribution = getattr(getattr(entry, "dist", None), "name", None) or "an installed package"
    where = f"environment '{env_id}' (declared by {distribution} as {entry.value})"
    try:
        loaded = entry.load()
    except (Exception, SystemExit) as error:  # the package's own code: any fault there is its bug, chained
        raise UnavailableError(f"{where} cannot be loaded: {_fault(error)}") from error
    if not (isinstance(loaded, type) and issubclass(loaded, Environment)):
        raise InvalidTypeError(f"{where} is {loaded!r}, not a subclass of warpsim.Environment")
    return loaded


def _import_class(spec: str) -> type[Environment]:
    """The class named by ``package.module:Class``; the module may sit in the current directory."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute or module_name.startswith("."):
        raise InvalidValueError(f"environment {spec!r} is not an id nor package.module:Class; give "
                                f"package.module:Class with an absolute module name, e.g. mypackage.env:MyEnv")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())  # as `python -m` would: a module next to the user is found
    try:
        found: Any = importlib.import_module(module_name)
    except ImportError as error:
        raise InvalidValueError(f"cannot import {module_name} for environment {spec!r}: {error}; the module must "
                                f"be installed, on PYTHONPATH or in the current directory") from error
    except (Exception, SystemExit) as error:  # the user's module itself failed: their bug, its traceback chained
        raise InvalidValueError(f"environment {spec!r}: importing {module_name} failed: {_fault(error)}") from error
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise InvalidValueError(f"environment {spec!r}: {module_name} has no attribute {attribute!r}") from None
        except (Exception, SystemExit) as error:
            raise InvalidValueError(f"environment {spec!r}: reading {attribute} of {module_name} failed: "
                                    f"{_fault(error)}") from error
    if not (isinstance(found, type) and issubclass(found, Environment)):
        raise InvalidTypeError(f"environment {spec!r} is {found!r}, not a subclass of warpsim.Environment")
    return found


def _fault(error: BaseException) -> str:
    """An exception raised by a user's code, on one line: its type and the first line of its message."""
    if isinstance(error, SyntaxError):
        return f"SyntaxError: {error.msg} ({error.filename}, line {error.lineno})"
    if isinstance(error, SystemExit):
        return f"it called sys.exit({error.code!r})"
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def make(env: str | type[Environment], num_envs: int = 1, **kwargs: Any) -> Environment:
    """Builds ``num_envs`` copies of an environment.

    ``kwargs`` are the environment's parameters (fields of its ``Params``) and the
    runtime options ``backend`` ('auto', 'cuda', 'numpy'), ``device``, ``seed``, ``checked``
    (validate action indices every step) and ``streams`` (a power of two: environment e draws its
    random numbers as environment e mod ``streams`` does; None, the default: each its own).
    Unknown names are an error.
    """
    cls, params, options = _class_and_params(env, kwargs)
    return cls(num_envs, params, **options)


def layout(env: str | type[Environment], num_envs: int = 1, **params: Any) -> Layout:
    """What ``make(env, num_envs, **params)`` would hold (its spec and arrays' bytes), worked out
    without allocating anything (``Environment.layout``)."""
    cls, made_params, _ = _class_and_params(env, params)
    return cls.layout(made_params, num_envs)


def _class_and_params(env: str | type[Environment], kwargs: dict) -> tuple[type[Environment], Any, dict]:
    """The class, its ``Params`` and the runtime options from ``make``'s arguments."""
    cls = env_class(env)
    param_names = [field.name for field in dataclasses.fields(cls.Params)]
    unknown = [name for name in kwargs if name not in param_names and name not in RUNTIME_OPTIONS]
    if unknown:
        raise InvalidTypeError(f"unknown parameter(s) {', '.join(map(repr, unknown))} for {cls.display_name}; "
                        f"parameters: {', '.join(param_names)}; runtime options: {', '.join(RUNTIME_OPTIONS)}")
    options = {name: value for name, value in kwargs.items() if name in RUNTIME_OPTIONS}
    params = cls.Params(**{name: value for name, value in kwargs.items() if name not in RUNTIME_OPTIONS})
    return cls, params, options


def parse_env_settings(env_id: str | type[Environment], settings: list[str]) -> dict:
    """``NAME=VALUE`` pairs into parameters; values are Python literals (10, 0.5, False),
    true/false in any case are booleans, none in any case is None (but for a string parameter),
    and a bare word is a string parameter's value."""
    declared = dataclasses.fields(env_class(env_id).Params)
    fields = {f.name for f in declared}
    strings = {f.name for f in declared if f.type in (str, "str")}
    params: dict[str, Any] = {}
    for setting in settings:
        name, sep, text = setting.partition("=")
        if not sep or name not in fields:
            raise InvalidValueError(
                f"--set {setting!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(fields))}")
        if text.strip().lower() in ("true", "false"):
            params[name] = text.strip().lower() == "true"
            continue
        if text.strip().lower() == "none" and name not in strings:
            params[name] = None
            continue
        try:
            params[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            if name in strings:
                params[name] = text.strip()
                continue
            raise InvalidValueError(
                f"--set {setting!r}: {text!r} is not a number, true/false, none or a quoted string") from None
    return params
