"""Environment ids and ``make``: one registry for every backend."""

from __future__ import annotations

import ast
import dataclasses
from typing import Any

from warpsim.environment import Environment
from warpsim.errors import InvalidTypeError, InvalidValueError

RUNTIME_OPTIONS = ("backend", "device", "seed", "checked")
_registry: dict[str, type[Environment]] = {}


def register(env_id: str, env_class: type[Environment]) -> None:
    """Makes ``env_class`` available to ``make`` as ``env_id``; refuses duplicates."""
    if not isinstance(env_id, str) or not env_id:
        raise InvalidValueError(f"environment id {env_id!r} is not allowed; give a non-empty string")
    if not (isinstance(env_class, type) and issubclass(env_class, Environment)):
        raise InvalidTypeError(f"cannot register {env_class!r} as '{env_id}': it is not a subclass of "
                        f"warpsim.Environment")
    if env_id in _registry:
        raise InvalidValueError(f"environment id '{env_id}' is already registered (to "
                         f"{_registry[env_id].__name__}); pick another id")
    _registry[env_id] = env_class


def registered() -> tuple[str, ...]:
    """The ids ``make`` accepts, sorted."""
    return tuple(sorted(_registry))


def env_class(env: str | type[Environment]) -> type[Environment]:
    """The class behind an id (or the class itself)."""
    if isinstance(env, str):
        if env not in _registry:
            raise InvalidValueError(f"unknown environment '{env}'; registered: {', '.join(registered())}")
        return _registry[env]
    if isinstance(env, type) and issubclass(env, Environment):
        return env
    raise InvalidTypeError(f"make() takes an environment id or a warpsim.Environment subclass, got {env!r}")


def make(env: str | type[Environment], num_envs: int = 1, **kwargs: Any) -> Environment:
    """Builds ``num_envs`` copies of an environment.

    ``kwargs`` are the environment's parameters (fields of its ``Params``) and the
    runtime options ``backend`` ('auto', 'cuda', 'numpy'), ``device``, ``seed`` and
    ``checked`` (validate action indices every step). Unknown names are an error.
    """
    cls = env_class(env)
    param_names = [field.name for field in dataclasses.fields(cls.Params)]
    unknown = [name for name in kwargs if name not in param_names and name not in RUNTIME_OPTIONS]
    if unknown:
        raise InvalidTypeError(f"unknown parameter(s) {', '.join(map(repr, unknown))} for {cls.name or cls.__name__}; "
                        f"parameters: {', '.join(param_names)}; runtime options: {', '.join(RUNTIME_OPTIONS)}")
    options = {name: kwargs.pop(name) for name in RUNTIME_OPTIONS if name in kwargs}
    return cls(num_envs, cls.Params(**kwargs), **options)


def parse_env_settings(env_id: str | type[Environment], settings: list[str]) -> dict:
    """``NAME=VALUE`` pairs into parameters; values are Python literals (10, 0.5, False), and
    true/false in any case are booleans."""
    fields = {f.name for f in dataclasses.fields(env_class(env_id).Params)}
    params = {}
    for setting in settings:
        name, sep, text = setting.partition("=")
        if not sep or name not in fields:
            raise InvalidValueError(
                f"--set {setting!r}: expected NAME=VALUE with NAME one of {', '.join(sorted(fields))}")
        if text.strip().lower() in ("true", "false"):
            params[name] = text.strip().lower() == "true"
            continue
        try:
            params[name] = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            raise InvalidValueError(
                f"--set {setting!r}: {text!r} is not a number, true/false or a quoted string") from None
    return params
