"""Resource fields that are the core's settings, so each default is declared once, in the core.

A resource exposes some of a core config's settings to the Dagster launchpad. Its field takes
the default, the bounds and the description from the core (a pydantic model's field, a
dataclass field, or a keyword of the core function the resource feeds) instead of repeating
them, so a changed default in the core is what the launchpad shows and runs with.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo


def setting(
    owner: type | Callable[..., Any],
    name: str,
    *,
    default_factory: Callable[[], Any] | None = None,
    description: str | None = None,
    **bounds: Any,
) -> Any:
    """The resource field of ``owner``'s setting ``name``.

    ``default_factory`` replaces the core's default where the environment supplies it (the
    core's default then stays the environment variable's fallback); ``description`` replaces
    the core's, or gives one where the core has none (a dataclass or a keyword); ``bounds``
    (``ge=1``, ...) are checked besides the core's own, for a core that declares none.
    """
    if isinstance(owner, type) and issubclass(owner, BaseModel):
        core = owner.model_fields[name]
    elif isinstance(owner, type) and dataclasses.is_dataclass(owner):
        declared = next(f for f in dataclasses.fields(owner) if f.name == name)
        core = FieldInfo(default=declared.default)
    else:
        core = FieldInfo(default=inspect.signature(owner).parameters[name].default)
    if default_factory is None and core.default_factory is not None:
        default_factory = core.default_factory  # type: ignore[assignment]
    if default_factory is not None:
        field = Field(
            default_factory=default_factory, description=description or core.description, **bounds
        )
    else:
        field = Field(default=core.default, description=description or core.description, **bounds)
    field.metadata = [*core.metadata, *field.metadata]  # the core's bounds (ge, le, ...) first
    return field
