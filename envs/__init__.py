"""The environments warpsim ships, one folder (a package) each.

Every folder here names its environment class in ``ENVIRONMENT`` (in its ``__init__.py``);
importing warpsim imports every folder and registers that class under its ``name``, so a new
built-in environment touches nothing outside its folder.
"""

import importlib
import pkgutil

from warpsim.errors import InvalidTypeError
from warpsim.registry import register


def _register_folders() -> None:
    for folder in pkgutil.iter_modules(__path__):
        if folder.ispkg:
            package = importlib.import_module(f"{__name__}.{folder.name}")
            if not hasattr(package, "ENVIRONMENT"):
                raise InvalidTypeError(f"envs/{folder.name}/__init__.py does not name its environment class; "
                                       f"add ENVIRONMENT = <its warpsim.Environment subclass>")
            register(package.ENVIRONMENT.name, package.ENVIRONMENT)


_register_folders()
