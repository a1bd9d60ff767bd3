# Copyright: egress-proxies contributors
# Apache License 2.0 (see LICENSE)
"""pydantic behind a guarded import, so module files import cleanly where it is missing.

Config schemas are declared with these names at import time. When pydantic is absent the
stand-ins below let the declarations evaluate, and ``require_pydantic()`` (called before any
validation) raises a clear "install pydantic" error instead of a traceback.
"""

from __future__ import annotations

import traceback

try:
    from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
    from pydantic.alias_generators import to_camel

    PYDANTIC_IMPORT_ERROR = None
except ImportError:  # pragma: no cover - exercised by ansible-test's import sanity test
    PYDANTIC_IMPORT_ERROR = traceback.format_exc()

    class BaseModel:  # type: ignore[no-redef]
        """Stand-in so schema classes can be declared without pydantic."""

    class ValidationError(Exception):  # type: ignore[no-redef]
        """Never raised: validation refuses to start without pydantic."""

    def ConfigDict(**kwargs):  # type: ignore[no-redef]  # noqa: N802 - mirrors pydantic's name
        return dict(kwargs)

    def Field(default=None, **kwargs):  # type: ignore[no-redef]  # noqa: N802
        return default

    def _passthrough_decorator(*args, **kwargs):
        return lambda func: func

    field_validator = _passthrough_decorator
    model_validator = _passthrough_decorator

    def to_camel(name):  # type: ignore[no-redef]
        return name


class MissingLibrary(Exception):
    """A Python library a feature needs is not installed where the module runs."""


def require_pydantic() -> None:
    if PYDANTIC_IMPORT_ERROR is not None:
        raise MissingLibrary(
            "the pydantic library is required to read providers configuration; "
            "install it on the host that runs the modules (pip install pydantic)"
        )


__all__ = [
    "BaseModel",
    "ConfigDict",
    "Field",
    "MissingLibrary",
    "ValidationError",
    "field_validator",
    "model_validator",
    "require_pydantic",
    "to_camel",
]
