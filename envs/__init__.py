"""The environments warpsim ships, one folder (a package) each.

Every folder here names its environment class in ``ENVIRONMENT`` (in its ``__init__.py``);
importing warpsim imports every folder and registers that class under its ``name``, so a new
built-in environment touches nothing outside its folder.
"""

import importlib
import pkgutil

from warpsim.registry import register

for _folder in pkgutil.iter_modules(__path__):
    if _folder.ispkg:
        _environment = importlib.import_module(f"{__name__}.{_folder.name}").ENVIRONMENT
        register(_environment.name, _environment)
