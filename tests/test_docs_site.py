"""The documentation site (``mkdocs.yml``, ``docs/hooks.py``): it builds in strict mode (no broken link, no
docstring warning), its API page documents every name of ``jaxmor.__all__``, and every notebook of
``notebooks/`` is a page with the outputs it stores (docs/design/docs-site.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mkdocs", reason="the docs extra (mkdocs-material, mkdocstrings-python, mkdocs-jupyter)")

import jaxmor  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
#: An output area of a notebook cell as mkdocs-jupyter (nbconvert's lab template) renders it.
OUTPUT_AREA = re.compile(r'class="jp-OutputArea-child[ "]')


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built with ``mkdocs build --strict`` from the repository root; fails with mkdocs's output."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout}\n{done.stderr}"
    assert "WARNING" not in done.stderr, done.stderr
    return out


def stored_outputs(notebook: Path) -> list[dict]:
    """The outputs the notebook's cells store."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [output for cell in cells for output in cell.get("outputs", ())]


def test_api_page_documents_every_public_name(site):
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    missing = [name for name in jaxmor.__all__ if f'id="jaxmor.{name}"' not in html]
    assert not missing, f"names of jaxmor.__all__ without a documented object on the API page: {missing}"


def test_api_page_renders_docstrings(site):
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    assert "Advance one world by one time step" in html  # jaxmor.step's docstring
    assert "doc-section" in html or "Parameters" in html  # the Args sections are rendered as tables


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[path.stem for path in NOTEBOOKS])
def test_notebook_pages_show_stored_outputs(site, notebook):
    page = site / "notebooks" / notebook.stem / "index.html"
    assert page.is_file(), f"no page for {notebook.name}"
    html = page.read_text(encoding="utf-8")
    assert "jp-Notebook" in html, f"{notebook.name} is not rendered as a notebook"
    outputs = stored_outputs(notebook)
    assert outputs, f"{notebook.name} stores no outputs; the site shows them (docs/design/docs-site.md: storing them)"
    assert len(OUTPUT_AREA.findall(html)) >= len(outputs), f"{notebook.name}: outputs missing from its page"
    images = sum("image/png" in output.get("data", {}) for output in outputs)
    assert html.count('src="data:image/png;base64,') >= images, f"{notebook.name}: figures missing from its page"
    home = (site / "index.html").read_text(encoding="utf-8")
    assert f"notebooks/{notebook.stem}/" in home, f"{notebook.name} is not in the site's navigation"


def test_api_page_documents_the_optional_modules(site):
    html = (site / "api" / "index.html").read_text(encoding="utf-8")
    for name in ("jaxmor.viewer.write_html", "jaxmor.tools.plot.plot_actuators", "jaxmor.tools.compare.dynamics"):
        assert f'id="{name}"' in html, name


def test_the_home_page_shows_the_readmes_quickstart(site):
    """The home page carries the README's two Quickstart command lines (inserted from README.md at build time)."""
    html = (site / "index.html").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    commands = re.search(r"```\n(.*?)```", readme, re.S).group(1).strip().splitlines()
    assert len(commands) == 2
    text = re.sub(r"<[^>]+>", "", html).replace("&quot;", '"').replace("&amp;", "&")
    assert all(command in text for command in commands), commands
