"""mkdocs hooks of the documentation site (``mkdocs.yml``): the notebooks, the API reference page and the home
page's quickstart.

The notebooks live in ``notebooks/``, outside ``docs_dir``: :func:`on_files` adds each one as the page
``notebooks/<name>.ipynb``, which mkdocs-jupyter renders from the file as stored (``execute: false``). The API
page, ``api.md``, is written here from ``jaxmor.__all__``, read statically from ``jaxmor/__init__.py`` (JAX is
not imported): one mkdocstrings block per name, grouped by the package the name is imported from, so the list
has one source. :class:`ReSTRoles`, a griffe extension that mkdocstrings loads from this file, shows the
docstrings' Sphinx roles as code. The optional modules (:data:`EXTRA_MODULES`, each needing an extra) follow
the exported names on the API page. :func:`on_page_markdown` puts the README's Quickstart commands (its first code
block, the one copy) on the home page. docs/design/docs-site.md describes the site.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import griffe
from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
PACKAGE = "jaxmor"
API_PAGE = "api.md"
#: The group of the names that are modules (``jaxmor.envs``, ``jaxmor.sysid``, ...), placed last.
MODULES_GROUP = "Modules"
#: Modules outside ``jaxmor.__all__`` (each needs an extra) that the API page documents after the exported names.
EXTRA_MODULES = ("jaxmor.viewer", "jaxmor.tools.plot", "jaxmor.tools.compare")
#: A Sphinx cross-reference role in a docstring: ``:func:`name```, ``:class:`~name```, ...
ROLE = re.compile(r":(?:func|class|mod|attr|data|meth|exc|obj):`(~?)([^`]+)`")


@event_priority(100)  # first: mkdocs-jupyter's on_files must see the notebooks to render them
def on_files(files: Files, config) -> Files:
    """Add the notebooks and the generated API page to the site's files."""
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        # a File whose src_dir is the repository root (mkdocs-jupyter's wrapper cannot read a File.generated)
        source = path.relative_to(ROOT).as_posix()
        files.append(File(source, str(ROOT), config.site_dir, config.use_directory_urls))
    files.append(File.generated(config, API_PAGE, content=api_markdown(ROOT)))
    return files


def exported_names(root: Path) -> dict[str, str]:
    """``jaxmor.__all__``'s names in order, each with the module it is imported from in ``jaxmor/__init__.py``.

    Raises:
        ValueError: ``__init__.py`` assigns no literal ``__all__``, or exports a name it does not import.
    """
    init = root / PACKAGE / "__init__.py"
    tree = ast.parse(init.read_text(encoding="utf-8"), filename=str(init))
    sources, exported = {}, None
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            sources.update({alias.asname or alias.name: node.module for alias in node.names})
        elif isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__" for t in node.targets):
            exported = ast.literal_eval(node.value)
    if exported is None:
        raise ValueError(f"{init} assigns no literal __all__: the API page is generated from it")
    unknown = [name for name in exported if name not in sources]
    if unknown:
        raise ValueError(f"{init}: __all__ names {unknown}, which no 'from ... import' statement imports")
    return {name: sources[name] for name in exported}


def module_path(root: Path, dotted: str) -> Path | None:
    """The source file of module ``dotted`` under ``root`` (a package's ``__init__.py``), or None."""
    base = root.joinpath(*dotted.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def group_of(root: Path, name: str, source: str) -> str:
    """The API page's group of ``name``: ``MODULES_GROUP`` for a module, else its layer, e.g. ``jaxmor.sim``."""
    if module_path(root, f"{source}.{name}") is not None:
        return MODULES_GROUP
    return ".".join(source.split(".")[:2])


def summary(root: Path, dotted: str) -> str:
    """The first paragraph of module ``dotted``'s docstring, on one line ("" without one)."""
    path = module_path(root, dotted)
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) if path else None
    return markdown_roles(" ".join((docstring or "").split("\n\n")[0].split()))


def markdown_roles(text: str) -> str:
    """``text`` with its Sphinx roles (``:func:`jaxmor.step```, ``:class:`~jaxmor.State```) as Markdown code of
    their targets; ``~`` keeps the target's last name, as Sphinx shows it."""
    return ROLE.sub(lambda match: f"`{match[2].rsplit('.', 1)[-1] if match[1] else match[2]}`", text)


class ReSTRoles(griffe.Extension):
    """A griffe extension (``extensions`` in ``mkdocs.yml``): the docstrings' Sphinx roles as Markdown code,
    rewritten before mkdocstrings parses them (Markdown would show ``:func:`` as text)."""

    def on_object(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_roles(obj.docstring.value)


def api_markdown(root: Path) -> str:
    """The API page: every name of ``jaxmor.__all__`` as a mkdocstrings block, alphabetical within its group."""
    groups: dict[str, list[str]] = {}
    for name, source in exported_names(root).items():
        groups.setdefault(group_of(root, name, source), []).append(name)
    order = sorted(groups, key=lambda group: (group == MODULES_GROUP, group))
    lines = [
        "# API reference",
        "",
        f"Every public name of `{PACKAGE}` (its `__all__`), grouped by the package it is defined in. "
        f"Import them from `{PACKAGE}`, not from their modules.",
    ]
    for group in order:
        intro = "The modules exported by `jaxmor`." if group == MODULES_GROUP else summary(root, group)
        lines += ["", f"## {group}", "", intro, ""]
        lines += [f"::: {PACKAGE}.{name}\n" for name in sorted(groups[group], key=str.lower)]
    lines += ["", "## Optional modules", "", "Modules that need an extra (`viewer`, `plot`, `mujoco`): import them "
              "by their path.", ""]  # fmt: skip
    lines += [f"::: {module}\n" for module in EXTRA_MODULES]
    return "\n".join(lines) + "\n"


def quickstart(root: Path) -> str:
    """The home page's install section: the README's Quickstart commands (the first code block of its
    ``## Quickstart`` section)."""
    section = (root / "README.md").read_text(encoding="utf-8").split("## Quickstart", 1)[1]
    block = re.search(r"```\n(.*?)```", section, re.S)
    if block is None:
        raise ValueError("README.md's Quickstart section has no code block")
    return (
        "## Install and first run\n\nFrom a clone of the repository (the README's Quickstart: the demo, then the "
        f"tests):\n\n```\n{block.group(1)}```\n\n"
    )


def on_page_markdown(markdown: str, page, config, files) -> str:
    """The home page (``index.md``) gets :func:`quickstart` after its title."""
    if page.file.src_uri != "index.md":
        return markdown
    title, rest = markdown.split("\n", 1)
    return f"{title}\n\n{quickstart(ROOT)}{rest.lstrip()}"
