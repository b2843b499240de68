"""The package's shape (issue 22, docs/layout.md): one module per concern, small enough to read.
No module of rnnbench over MAX_MODULE_LINES lines, no function over MAX_FUNCTION_LINES lines
(its docstring aside), no import cycle between its modules (imports inside functions
included: a cycle hidden there is still one), and no ``sys.path`` edit in the repository's
Python but the rule scripts' one bootstrap (workflow/rules/config.smk)."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "workflow" / "scripts" / "rnnbench"
MAX_MODULE_LINES = 460
MAX_FUNCTION_LINES = 60
MODULES = sorted(PACKAGE.rglob("*.py"))


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> set[str]:
    """The rnnbench modules ``path`` imports, at its top or inside functions."""
    names = set()
    known = {module_name(p) for p in MODULES}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level:  # from . import x (runners)
            base = module_name(path).rsplit(".", node.level)[0]
            names |= {f"{base}.{node.module or alias.name}" for alias in node.names}
    return {name for name in names if name in known} - {module_name(path)}


def test_no_module_is_over_its_size():
    sizes = {p.relative_to(REPO): len(p.read_text().splitlines()) for p in MODULES}
    assert {path: n for path, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def function_lines(node: ast.FunctionDef) -> int:
    """Lines of a function's body, its docstring left out."""
    body = node.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    return 0 if not body else body[-1].end_lineno - body[0].lineno + 1


def test_no_function_is_over_its_size():
    long = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if function_lines(node) > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(REPO)}:{node.name}"] = function_lines(node)
    assert long == {}


def test_the_modules_import_each_other_without_a_cycle():
    graph = {module_name(p): imported_modules(p) for p in MODULES}
    done, path = set(), []

    def visit(name: str) -> None:
        if name in path:
            pytest.fail("import cycle: " + " -> ".join(path[path.index(name):] + [name]))
        if name in done:
            return
        path.append(name)
        for other in sorted(graph.get(name, ())):
            visit(other)
        path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_a_cycle_is_found_where_there_is_one(tmp_path):
    # the checker itself: two modules that import each other inside functions
    (tmp_path / "a.py").write_text("def f():\n    from rnnbench import b\n")
    (tmp_path / "b.py").write_text("def g():\n    import rnnbench.a\n")
    global MODULES, PACKAGE
    saved = MODULES, PACKAGE
    try:
        PACKAGE = tmp_path / "rnnbench"
        PACKAGE.mkdir()
        for name in ("a.py", "b.py"):
            (tmp_path / name).rename(PACKAGE / name)
        MODULES = sorted(PACKAGE.rglob("*.py"))
        with pytest.raises(pytest.fail.Exception, match="import cycle: rnnbench.a -> rnnbench.b"):
            test_the_modules_import_each_other_without_a_cycle()
    finally:
        MODULES, PACKAGE = saved


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
