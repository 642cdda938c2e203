"""Docs that cannot drift: what the documentation says about the code and about itself is checked against it.

- ``docs/architecture.md``'s step block, a Python sketch of ``jaxmor/sim/pipeline.py``'s ``step``, enters the same
  ``jax.named_scope`` stages in the same order (``stages`` between the two halves of the guard): both are read
  with ``ast``, the functions a function names followed;
- its module table lists exactly the package's modules: every ``.py`` file of ``jaxmor/`` but the
  ``__init__.py`` files, and the ``__init__.py`` of a package that has no other module (``robots``);
- the pages are listed once: ``mkdocs.yml``'s ``nav:`` is the list. Every Markdown page under ``docs/`` (the
  design notes included: they are in the nav) and every notebook of ``notebooks/`` is in it exactly once, and
  every entry is a page (``api.md`` is written by ``docs/hooks.py``, the notebooks are added by it);
  ``docs/index.md``'s list of pages is the nav's, in its order; the README points to ``docs/index.md`` and
  carries no second list;
- every relative link of ``README.md`` and of the pages (images included) names a file that exists, and its
  anchor, on a page, one of that page's headings; every repository path the README or a page names in code
  (``docs/...``, ``jaxmor/...``, ...) exists.

Static: nothing here imports jaxmor or mkdocs (``tests/test_docs_site.py`` builds the site when mkdocs is
installed). docs/design/docs-site.md describes the site.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "jaxmor"
PIPELINE = PACKAGE / "sim" / "pipeline.py"
ARCHITECTURE = DOCS / "architecture.md"
README = ROOT / "README.md"
INDEX = DOCS / "index.md"

#: A fenced code block (```lang ... ```), whose text is code, not Markdown.
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.S | re.M)
#: An inline code span (one or two backticks).
CODE_SPAN = re.compile(r"(``?)(.+?)\1")
#: A Markdown link or image: ``[text](target)`` or ``![alt](target "title")``.
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
#: A repository path named in code: ``docs/x.md``, ``jaxmor/sim/pipeline.py``, ``bench/README.md``, ...
REPO_PATH = re.compile(r"^(?:docs|jaxmor|tests|bench|robots|notebooks|policies)/[\w./-]*$")
#: A placeholder segment of such a path (``notebooks/NAME/``): capitals, no dot.
PLACEHOLDER = re.compile(r"(?:^|/)[A-Z_]+(?:/|$)")


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _section(text: str, heading: str) -> str:
    """The text under the level-2 ``heading`` up to the next level-2 heading."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


# ---------------------------------------------------------------------------------------------------------------
# The step's stages


def _named_scopes(tree: ast.Module, name: str, stack: tuple[str, ...] = ()) -> list[str]:
    """The ``jax.named_scope`` names the module-level function ``name`` enters, in source order, with the scopes of
    the module's functions it names (calls or passes) put where it names them."""
    functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
    found: list[str] = []

    class Visitor(ast.NodeVisitor):
        def visit_withitem(self, item: ast.withitem) -> None:
            call = item.context_expr
            if isinstance(call, ast.Call) and getattr(call.func, "attr", getattr(call.func, "id", None)) == (
                "named_scope"
            ):
                assert len(call.args) == 1 and isinstance(call.args[0], ast.Constant), ast.unparse(call)
                found.append(call.args[0].value)
            self.generic_visit(item)

        def visit_Name(self, node: ast.Name) -> None:
            if node.id in functions and node.id not in stack + (name,):
                found.extend(_named_scopes(tree, node.id, stack + (name,)))

    for statement in functions[name].body:
        Visitor().visit(statement)
    return found


def pipeline_scopes(name: str = "step") -> list[str]:
    """The named scopes that ``jaxmor.sim.pipeline.<name>`` runs, in order (read from the source, not imported)."""
    return _named_scopes(ast.parse(_read(PIPELINE), filename=str(PIPELINE)), name)


def architecture_step_block() -> str:
    """The Python block of the architecture page's section "The step"."""
    section = _section(_read(ARCHITECTURE), "The step")
    blocks = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    assert len(blocks) == 1, f"{ARCHITECTURE.name}, 'The step': expected one python block, found {len(blocks)}"
    return blocks[0]


def documented_scopes(name: str = "step") -> list[str]:
    """The named scopes that ``<name>`` of the architecture page's step block enters, in order."""
    return _named_scopes(ast.parse(architecture_step_block(), filename="docs/architecture.md"), name)


def test_the_pipeline_scopes_are_read_from_the_source():
    """The reader above sees what ``stages`` and ``step`` run (so the next test compares against something)."""
    stages = pipeline_scopes("stages")
    assert stages[:3] == ["drive_train", "kinematics", "dynamics"] and "solver" in stages
    assert pipeline_scopes("step") == ["guard", *stages, "guard"]


def test_the_architecture_page_names_the_pipeline_stages_in_order():
    """``docs/architecture.md``'s step block enters the named scopes ``step`` enters, in the same order."""
    documented = documented_scopes()
    actual = pipeline_scopes()
    assert documented == actual, (
        f"docs/architecture.md ('The step') names the scopes {documented}; jaxmor/sim/pipeline.py's step runs "
        f"{actual}: update the page's block"
    )


# ---------------------------------------------------------------------------------------------------------------
# The module table


def package_modules() -> set[str]:
    """Every module of ``jaxmor``, as a path relative to ``jaxmor/``: each ``.py`` file but the ``__init__.py``
    files, and the ``__init__.py`` of a package with no other module (``robots/__init__.py``)."""
    modules = set()
    for path in PACKAGE.rglob("*.py"):
        if path.name != "__init__.py" or all(p.name == "__init__.py" for p in path.parent.rglob("*.py")):
            modules.add(path.relative_to(PACKAGE).as_posix())
    return modules


def table_modules() -> list[str]:
    """The modules the architecture page's module table lists, row by row (the first cell of each row)."""
    rows = [line for line in _section(_read(ARCHITECTURE), "The modules").splitlines() if line.startswith("|")]
    header, rule, *body = rows
    assert header.startswith("| module |") and set(rule) <= set("|-: "), "the module table's header moved"
    listed = []
    for row in body:
        cell = re.match(r"\| `([^`]+)` \|", row)
        assert cell, f"a module table row whose first cell is not one module path in backticks: {row[:80]}"
        listed.append(cell.group(1))
    return listed


def test_the_module_table_lists_exactly_the_package_modules():
    listed = table_modules()
    duplicated = sorted({m for m in listed if listed.count(m) > 1})
    assert not duplicated, f"docs/architecture.md's module table lists these more than once: {duplicated}"
    modules = package_modules()
    missing, stale = sorted(modules - set(listed)), sorted(set(listed) - modules)
    assert not missing, f"modules missing from docs/architecture.md's module table (add a row each): {missing}"
    assert not stale, f"rows of docs/architecture.md's module table for modules that do not exist: {stale}"


# ---------------------------------------------------------------------------------------------------------------
# One list of pages: mkdocs.yml's nav


class _TolerantLoader(yaml.SafeLoader):
    """A safe YAML loader that reads any tag it does not know (``!!python/name:...``, ``!ENV``) as None."""


_TolerantLoader.add_multi_constructor("", lambda loader, suffix, node: None)


def _flatten(entries) -> list[str]:
    """The pages of a nav (strings, ``{title: page}`` and ``{title: [entries]}``), in order."""
    pages = []
    for entry in entries:
        if isinstance(entry, str):
            pages.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                pages.extend([value] if isinstance(value, str) else _flatten(value))
        else:
            raise AssertionError(f"mkdocs.yml: a nav entry that is neither a page nor a section: {entry!r}")
    return pages


def nav_pages() -> list[str]:
    """``mkdocs.yml``'s ``nav:``, flattened: the site's pages in order, relative to ``docs/``."""
    config = yaml.load(_read(ROOT / "mkdocs.yml"), Loader=_TolerantLoader)
    assert config.get("docs_dir", "docs") == "docs"
    return _flatten(config["nav"])


def generated_pages() -> set[str]:
    """The pages ``docs/hooks.py`` writes (``API_PAGE``); read from its source, which imports mkdocs."""
    return set(re.findall(r"^API_PAGE = \"([^\"]+)\"$", _read(DOCS / "hooks.py"), re.M))


def test_the_hooks_page_names_are_read():
    assert generated_pages() == {"api.md"}


def test_every_page_is_in_the_nav_exactly_once():
    nav = nav_pages()
    repeated = sorted({page for page in nav if nav.count(page) > 1})
    assert not repeated, f"mkdocs.yml's nav lists these more than once: {repeated}"
    pages = {path.relative_to(DOCS).as_posix() for path in DOCS.rglob("*.md")}
    notebooks = {f"notebooks/{path.name}" for path in (ROOT / "notebooks").glob("*.ipynb")}
    unlisted = sorted((pages | notebooks) - set(nav))
    assert not unlisted, f"pages and notebooks missing from mkdocs.yml's nav (each must be reachable): {unlisted}"
    generated = generated_pages()
    assert not generated & pages, f"docs/ holds a page that docs/hooks.py writes: {generated & pages}"
    dangling = sorted(set(nav) - pages - notebooks - generated)
    assert not dangling, f"mkdocs.yml's nav names pages that do not exist: {dangling}"


def index_pages() -> list[str]:
    """The pages ``docs/index.md`` lists: the target of each list item's leading link, in order."""
    return re.findall(r"^- \[[^\]]*\]\(([^)#\s]+)", _read(INDEX), re.M)


def test_the_index_lists_the_nav_in_its_order():
    """``docs/index.md``'s list is the nav's, less itself and the generated API page, in the nav's order."""
    expected = [page for page in nav_pages() if page != "index.md" and page not in generated_pages()]
    listed = index_pages()
    assert listed == expected, (
        f"docs/index.md's list differs from mkdocs.yml's nav: missing {sorted(set(expected) - set(listed))}, "
        f"not in the nav {sorted(set(listed) - set(expected))}; both in the same order otherwise"
    )


def test_the_readme_points_to_the_index_and_lists_no_pages():
    """The README's "Documentation" names ``docs/index.md`` and has no list of pages of its own."""
    section = _section(_read(README), "Documentation")
    assert "`docs/index.md`" in section
    listed = re.findall(r"^[ \t]*[-*] (?:`docs/[^`]+`|\[[^\]]*\]\(docs/[^)]+\))", _read(README), re.M)
    assert not listed, f"README.md lists pages (docs/index.md is the list; point to it instead): {listed}"


# ---------------------------------------------------------------------------------------------------------------
# Links


def _prose(text: str) -> str:
    """Markdown text without its fenced code blocks and inline code spans."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor of a heading, as Python-Markdown's ``toc`` extension makes it (mkdocs's default)."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "").replace("*", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    """The anchors of a page's headings (a repeated heading's second anchor gets ``_1``, as ``toc`` does)."""
    found: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", FENCE.sub("", _read(page)), re.M):
        anchor, n = slug(heading), 0
        while (anchor if n == 0 else f"{anchor}_{n}") in found:
            n += 1
        found.add(anchor if n == 0 else f"{anchor}_{n}")
    return found


def resolve(source: Path, target: str) -> Path | None:
    """The file a relative link of ``source`` names: beside it, or on a docs page, a notebook (``notebooks/``, at
    the repository's root) or a generated page (None: nothing to check)."""
    path = (source.parent / target).resolve()
    if source.is_relative_to(DOCS) and path.is_relative_to(DOCS):
        inside = path.relative_to(DOCS).as_posix()
        if inside in generated_pages():
            return None
        if inside.startswith("notebooks/"):
            return ROOT / inside
    return path


def link_problems(source: Path) -> list[str]:
    """What is wrong with the relative links of one Markdown file: missing files and missing anchors."""
    problems = []
    for target in LINK.findall(_prose(_read(source))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith(("/", "#")):
            continue  # a URL, a site-absolute path or an anchor of this page
        file, _, anchor = target.partition("#")
        path = resolve(source, file)
        if path is None:
            continue
        if not path.exists():
            problems.append(f"{target}: no file {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        elif anchor and path.suffix == ".md" and anchor not in anchors(path):
            problems.append(f"{target}: {path.name} has no heading with the anchor #{anchor}")
    return problems


MARKDOWN = [README, *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("source", MARKDOWN, ids=[path.relative_to(ROOT).as_posix() for path in MARKDOWN])
def test_relative_links_resolve(source):
    problems = link_problems(source)
    assert not problems, f"{source.relative_to(ROOT)}: links that resolve to nothing: {problems}"


@pytest.mark.parametrize("source", MARKDOWN, ids=[path.relative_to(ROOT).as_posix() for path in MARKDOWN])
def test_repository_paths_named_in_code_exist(source):
    """A path such as ``docs/worlds.md`` or ``jaxmor/sim/pipeline.py`` in an inline code span names a file or a
    folder of the repository (relative to its root, as the README and the pages write them; a placeholder such
    as ``notebooks/NAME/`` aside)."""
    spans = [span.strip() for _, span in CODE_SPAN.findall(FENCE.sub("", _read(source)))]
    named = {span for span in spans if REPO_PATH.match(span) and not PLACEHOLDER.search(span)}
    missing = sorted(span for span in named if not (ROOT / span).exists())
    assert not missing, f"{source.relative_to(ROOT)} names repository paths that do not exist: {missing}"


def test_the_link_checks_see_a_broken_link(tmp_path):
    """The checks above fail where they should: a missing file, a missing anchor (a made-up page)."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Title\n\n## A `code` heading\n\n[ok](#title) [a](missing.md) [b](page.md#nope) "
        "[c](page.md#a-code-heading) `[d](missing-in-code.md)`\n",
        encoding="utf-8",
    )
    assert anchors(page) == {"title", "a-code-heading"}
    problems = link_problems(page)
    assert len(problems) == 2 and "missing.md" in problems[0] and "#nope" in problems[1]
