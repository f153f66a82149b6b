"""The variants file (``[[variant]]`` tables of spec fields) and the generator's user errors."""

from __future__ import annotations

import tomllib
from pathlib import Path

import click

from .spec import Spec, SpecError


class GenError(click.ClickException):
    """A failure that is the user's to fix (bad spec file, unwritable folder): exit 2."""

    exit_code = 2


def load_variants(path: Path) -> list[Spec]:
    """The declarative list of variants (``[[variant]]`` tables of spec fields)."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise GenError(f"--variants: cannot read {path}: {e}") from None
    entries = data.get("variant")
    if not isinstance(entries, list) or not entries:
        raise GenError(f"--variants: {path} has no [[variant]] tables")
    specs, names = [], {}
    for i, entry in enumerate(entries, 1):
        try:
            spec = Spec.create(**entry)
        except (SpecError, TypeError) as e:
            raise GenError(f"--variants: {path}, variant {i}: {e}") from None
        if spec.module_name in names:
            raise GenError(
                f"--variants: {path}: variants {names[spec.module_name]} and {i} are both named "
                f"{spec.module_name!r}; give one a distinct name"
            )
        names[spec.module_name] = i
        specs.append(spec)
    return specs
