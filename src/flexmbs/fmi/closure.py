"""Which of our source files an FMU needs: the modules its slave imports, followed through every
import statement (also those inside functions) within our own packages.

An FMU bundles exactly these files, so a change to a host tool that the slave never imports (a
sweep plot, the SSP writer, the build itself) leaves a plant FMU's bundle and its digest as
they were.
"""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path


def package_roots(packages: tuple[str, ...]) -> dict[str, Path]:
    """Folder of each installed top-level package."""
    roots = {}
    for name in packages:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            raise ModuleNotFoundError(f"package {name} is not installed")
        roots[name] = Path(list(spec.submodule_search_locations)[0])
    return roots


def _module_file(roots: dict[str, Path], module: str) -> Path | None:
    """The source file of a dotted module name within `roots`, or None (not ours, or absent)."""
    top, *rest = module.split(".")
    if top not in roots:
        return None
    base = roots[top].joinpath(*rest)
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


def _imported(tree: ast.AST, module: str, is_package: bool) -> set[str]:
    """Dotted names every import statement of a module may load (a `from x import y` may load
    the submodule x.y)."""
    names: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            names.update(f"{target}.{alias.name}" for alias in node.names)
    return names


def import_closure(roots: dict[str, Path], entries: tuple[str, ...]) -> tuple[str, ...]:
    """Sorted "package/relative/path.py" of every file of `roots` that the modules `entries`
    import, directly or through others, with the __init__ of each package on the way."""
    seen: dict[str, Path] = {}
    todo = list(entries)
    while todo:
        module = todo.pop()
        parts = module.split(".")
        for k in range(1, len(parts) + 1):   # importing a.b.c runs a and a.b first
            name = ".".join(parts[:k])
            path = _module_file(roots, name)
            if path is None or name in seen:
                continue
            seen[name] = path
            tree = ast.parse(path.read_bytes(), filename=str(path))
            todo.extend(_imported(tree, name, path.name == "__init__.py"))
    files = {f"{name.split('.')[0]}/{path.relative_to(roots[name.split('.')[0]]).as_posix()}"
             for name, path in seen.items()}
    return tuple(sorted(files))


def third_party(roots: dict[str, Path], files: tuple[str, ...]) -> set[str]:
    """Top-level names of the packages outside `roots` and the standard library that `files`
    import at module level (what must be importable before the FMU can run; imports inside
    functions are left out: they serve optional features such as plots and progress bars)."""
    names: set[str] = set()
    for name in files:
        package, rel = name.split("/", 1)
        for node in ast.parse((roots[package] / rel).read_bytes()).body:
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
    return {n for n in names if n not in roots and n not in sys.stdlib_module_names and n != "__future__"}
