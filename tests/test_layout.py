"""The package's shape (docs/layout.md): subpackages by concern in the data's order, each
importing only those below it; no import cycle; no command importing another; no private
name used across modules; no function over MAX_FUNCTION_LINES lines (its docstring aside);
and no ``sys.path`` edit in the repository's Python but the rule scripts' one bootstrap
(workflow/rules/config.smk)."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow" / "scripts" / "rnnbench"
MAX_FUNCTION_LINES = 60
LAYERS = ("grid", "jobs", "measure", "results", "stats", "costmodel", "report", "pipeline",
          "commands")
"""The subpackages, lowest first: each may import only itself and those before it. The
package's top (``cli``, ``__main__``) stands above them all. docs/layout.md says the same."""


def modules(package: Path) -> list[Path]:
    return sorted(package.rglob("*.py"))


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = path.relative_to(package.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, package: Path = PACKAGE) -> list[tuple[str, str]]:
    """(module, name) for each rnnbench name ``path`` imports, at its top or inside
    functions; name is '' for a whole module."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found += [(node.module, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:  # from . import x (runners)
            base = module_name(path, package).rsplit(".", node.level)[0]
            found += [(f"{base}.{node.module}" if node.module else base, alias.name)
                      for alias in node.names]
    return [(module, name) for module, name in found if module.split(".")[0] == "rnnbench"]


def imported_modules(path: Path, package: Path = PACKAGE) -> set[str]:
    """The rnnbench modules ``path`` imports (a name imported from a package counts as its
    submodule where there is one)."""
    known = {module_name(p, package) for p in modules(package)}
    names = {f"{module}.{name}" if f"{module}.{name}" in known else module
             for module, name in imports(path, package)}
    return {name for name in names if name in known} - {module_name(path, package)}


def layer(module: str) -> int:
    """The index of ``module``'s subpackage in LAYERS; len(LAYERS) for the package's top."""
    parts = module.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 1 and parts[1] in LAYERS else len(LAYERS)


def wrong_imports(package: Path = PACKAGE) -> list[str]:
    """Every import against the layers: upward, between two commands, or of a private name
    from another module."""
    wrong = []
    for path in modules(package):
        me = module_name(path, package)
        for other in sorted(imported_modules(path, package)):
            if other == "rnnbench":
                continue
            if layer(other) > layer(me):
                wrong.append(f"{me} imports {other}, a layer above it")
            elif layer(me) == layer(other) == LAYERS.index("commands"):
                wrong.append(f"{me} imports {other}: a command imports no other command")
        wrong += [f"{me} imports {module}.{name}, a private name" for module, name in
                  imports(path, package) if name.startswith("_") and module != me]
    return wrong


def test_every_subpackage_is_a_layer():
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(LAYERS)
    for name in LAYERS:
        assert (PACKAGE / name / "__init__.py").read_text() == "", f"{name}/__init__.py"
    top = {p.stem for p in PACKAGE.glob("*.py")}
    assert top == {"__init__", "__main__", "cli"}


def test_each_layer_imports_only_those_below_it():
    assert wrong_imports() == []


def test_a_wrong_import_is_found(tmp_path):
    # the checker itself: grid importing stats, one command another, a private name
    package = tmp_path / "rnnbench"
    for folder, name, text in [
            ("grid", "cells.py", "from rnnbench.stats import summary\n"),
            ("stats", "summary.py", "def _t():\n    pass\n"),
            ("commands", "a.py", "def f():\n    from rnnbench.commands import b\n"),
            ("commands", "b.py", "from rnnbench.stats.summary import _t\n")]:
        (package / folder).mkdir(parents=True, exist_ok=True)
        (package / folder / "__init__.py").write_text("")
        (package / folder / name).write_text(text)
    assert wrong_imports(package) == [
        "rnnbench.commands.a imports rnnbench.commands.b: a command imports no other command",
        "rnnbench.commands.b imports rnnbench.stats.summary._t, a private name",
        "rnnbench.grid.cells imports rnnbench.stats.summary, a layer above it"]


def function_lines(node: ast.FunctionDef) -> int:
    """Lines of a function's body, its docstring left out."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return 0 if not body else body[-1].end_lineno - body[0].lineno + 1


def test_no_function_is_over_its_size():
    long = {}
    for path in modules(PACKAGE):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if function_lines(node) > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.name}"] = function_lines(node)
    assert long == {}


def cycle(package: Path = PACKAGE) -> list[str]:
    """One import cycle among the package's modules (imports inside functions included: a
    cycle hidden there is still one), or []."""
    graph = {module_name(p, package): imported_modules(p, package) for p in modules(package)}
    done, path = set(), []

    def visit(name: str) -> list[str]:
        if name in path:
            return path[path.index(name):] + [name]
        if name in done:
            return []
        path.append(name)
        for other in sorted(graph.get(name, ())):
            if found := visit(other):
                return found
        path.pop()
        done.add(name)
        return []

    for name in sorted(graph):
        if found := visit(name):
            return found
    return []


def test_the_modules_import_each_other_without_a_cycle():
    assert cycle() == []


def test_a_cycle_is_found_where_there_is_one(tmp_path):
    # the checker itself: two modules that import each other inside functions
    package = tmp_path / "rnnbench"
    package.mkdir()
    (package / "a.py").write_text("def f():\n    from rnnbench import b\n")
    (package / "b.py").write_text("def g():\n    import rnnbench.a\n")
    assert cycle(package) == ["rnnbench.a", "rnnbench.b", "rnnbench.a"]


def test_no_sys_path_edits_outside_the_rule_scripts_bootstrap():
    edits = []
    for path in [*REPO.glob("workflow/**/*.py"), *REPO.glob("workflow/**/*.smk"),
                 REPO / "Snakefile"]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "sys.path.insert" in line or "sys.path.append" in line:
                edits.append(f"{path.relative_to(REPO)}:{number}")
    assert edits == ["workflow/rules/config.smk:" + str(next(
        n for n, line in enumerate((REPO / "workflow/rules/config.smk").read_text().splitlines(), 1)
        if "sys.path.insert" in line))]
