"""Writing rendered files: atomically, only when changed; and the drift check."""

from __future__ import annotations

import difflib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


def write_all(out_dir: Path, files: dict[str, str]) -> list[Path]:
    """Write the files whose content changed; returns their paths.

    All or nothing: every new text first goes to a temp file in ``out_dir``; only when all are
    written are they renamed into place, and if a rename fails or is interrupted, the files
    already replaced get their old content back (new ones are removed).  No temp file is left.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    pending: list[tuple[str, Path, str | None]] = []  # (temp file, target, old content)
    done: list[tuple[Path, str | None]] = []
    try:
        for name, text in files.items():
            path = out_dir / name
            old = _read(path)
            if old == text:
                continue
            fd, tmp = tempfile.mkstemp(dir=out_dir, prefix=f".{name}.", suffix=".tmp")
            pending.append((tmp, path, old))
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
        for tmp, path, old in pending:
            os.replace(tmp, path)
            done.append((path, old))
    except BaseException:
        for path, old in reversed(done):  # roll back what was already replaced
            if old is None:
                path.unlink(missing_ok=True)
            else:
                path.write_text(old, encoding="utf-8")
        raise
    finally:
        for tmp, _, _ in pending:
            Path(tmp).unlink(missing_ok=True)
    return [path for _, path, _ in pending]


@dataclass
class Drift:
    changed: dict[str, str] = field(default_factory=dict)  # name -> unified diff
    missing: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return not (self.changed or self.missing or self.orphans)


def check(out_dir: Path, files: dict[str, str], orphan_glob: str | None = None) -> Drift:
    """Compare rendered ``files`` with ``out_dir``.  ``orphan_glob``: files matching it that
    nothing renders are reported as orphans (used for the whole checked-in set)."""
    out_dir = Path(out_dir)
    drift = Drift()
    for name, text in sorted(files.items()):
        path = out_dir / name
        if not path.exists():
            drift.missing.append(name)
            continue
        current = path.read_text(encoding="utf-8")
        if current != text:
            drift.changed[name] = "".join(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    text.splitlines(keepends=True),
                    fromfile=f"{path} (on disk)",
                    tofile=f"{path} (rendered)",
                )
            )
    if orphan_glob and out_dir.is_dir():
        drift.orphans = sorted(p.name for p in out_dir.glob(orphan_glob) if p.name not in files)
    return drift
