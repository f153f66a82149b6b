"""Rendering is deterministic: the same bytes in two processes with different hash seeds and
working folders; the header changes when, and only when, a template or the spec changes."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import codegen.render as render_mod
from codegen.render import render
from codegen.spec import Spec

ROOT = Path(__file__).resolve().parent.parent


def _render_set(cwd: Path, seed: str) -> dict:
    env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
    cmd = [
        sys.executable,
        "-m",
        "codegen.cli",
        "--variants",
        str(ROOT / "generated" / "variants.toml"),
        "-o",
        "out",
    ]
    subprocess.run(cmd, cwd=cwd, env=env, check=True, capture_output=True)
    return {p.name: p.read_bytes() for p in sorted((cwd / "out").iterdir())}


def test_two_processes_two_seeds_two_folders_same_bytes(tmp_path):
    a, b = tmp_path / "a", tmp_path / "deeper" / "b"
    a.mkdir()
    b.mkdir(parents=True)
    first, second = _render_set(a, "1"), _render_set(b, "4242")
    n_variants = (ROOT / "generated" / "variants.toml").read_text().count("[[variant]]")
    assert first.keys() == second.keys() and len(first) == 2 * n_variants
    assert first == second
    # and identical to the checked-in set, rendered into another folder: the text does not
    # depend on the output folder
    for name, data in first.items():
        assert data == (ROOT / "generated" / name).read_bytes()


def _header(files):
    module = next(text for name, text in files.items() if not name.startswith("test_"))
    return module.splitlines()[:4]


def test_header_changes_iff_template_or_spec_changes(tmp_path, monkeypatch):
    spec = Spec.create(act="sigmoid", arch="sm80")
    base = _header(render(spec))
    assert _header(render(spec)) == base  # nothing changed: same header
    other = _header(render(Spec.create(act="relu", arch="sm80")))
    assert other[3] == base[3] and other[2] != base[2]  # spec changed: spec line only

    templates = tmp_path / "templates"
    shutil.copytree(render_mod.template_dir(), templates)
    monkeypatch.setattr(render_mod, "template_dir", lambda: templates)
    for cache in (render_mod._environment, render_mod._render_cached):
        cache.cache_clear()
    try:
        assert _header(render(spec)) == base  # a byte-identical copy: same hash
        for cache in (render_mod._environment, render_mod._render_cached):
            cache.cache_clear()
        module = templates / "module.py.j2"
        module.write_text(module.read_text() + "\n# a template change\n")
        changed = _header(render(spec))
        assert changed[3] != base[3] and changed[2] == base[2]  # template changed: hash only
    finally:
        for cache in (render_mod._environment, render_mod._render_cached):
            cache.cache_clear()
