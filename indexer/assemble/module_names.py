"""Module names from paths, and what an import binds (pure; used by the symbol graph).

A symbol's full qualified name is its file's module + separator + its in-file qualified
name. Where a language has no module (C, C++, Ruby, Swift...) the module is "" and the full
name is the in-file one.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass

SEPARATORS = {"rust": "::"}
# Languages whose files declare their package/namespace; the extractor's top-level
# module/package/namespace symbol names it, else the directory stands in.
DECLARED_PACKAGE = {"java", "kotlin", "scala", "csharp", "php"}
PACKAGE_KINDS = ("module", "package", "namespace")
JS_LANGUAGES = {"javascript", "typescript", "tsx"}
# Languages whose imports name files (`#include "a/b.h"`, `require "a/b"`), not modules.
FILE_IMPORTS = {"c": ("",), "cpp": ("",), "objc": ("",), "ruby": (".rb", "")}
# A JVM source root anywhere in a path (`src/main/java/`, `okhttp/src/jvmTest/kotlin/`): the
# directories after it are the package, as the build tools lay it out.
_JVM_ROOT = re.compile(r"(?:^|/)src/[^/]+/(?:java|kotlin|scala)/")
_JS_EXTENSIONS = (".d.ts", ".tsx", ".ts", ".mts", ".cts", ".jsx", ".js", ".mjs", ".cjs")


@dataclass(frozen=True)
class FileModule:
    path: str
    language: str
    module: str  # "" when the language defines none
    package: str  # where relative imports start (python: the containing package)
    sep: str


def separator(language: str) -> str:
    return SEPARATORS.get(language, ".")


def python_packages(paths: Iterable[str]) -> set[str]:
    """Directories holding an `__init__.py` (regular Python packages)."""
    return {posixpath.dirname(p) for p in paths
            if posixpath.basename(p) in ("__init__.py", "__init__.pyi")}


def python_module(path: str, packages: set[str]) -> tuple[str, str]:
    """(dotted module, containing package): the module starts below the topmost directory
    chain holding `__init__.py`; a file outside packages is named by its whole path (a
    leading `src/` or `lib/` dropped), so names stay unique in namespace-package layouts."""
    stem = path.rsplit(".", 1)[0] if path.endswith((".py", ".pyi", ".pyw")) else path
    parts = stem.split("/")
    is_init = parts[-1] == "__init__"
    dirs = parts[:-1]
    root = len(dirs)
    while root > 0 and "/".join(dirs[:root]) in packages:
        root -= 1
    if root == len(dirs):
        root = 1 if dirs and dirs[0] in ("src", "lib", "Lib") else 0
    mod_parts = parts[root:-1] if is_init else parts[root:]
    if not mod_parts:
        mod_parts = parts[-2:-1] if is_init and len(parts) > 1 else parts[-1:]
    module = ".".join(mod_parts)
    package = module if is_init else ".".join(mod_parts[:-1])
    return module, package


def _strip_js(path: str) -> str:
    for ext in _JS_EXTENSIONS:
        if path.endswith(ext):
            path = path[: -len(ext)]
            break
    return path[: -len("/index")] if path.endswith("/index") else path


def rust_module(path: str) -> str:
    """`crate::a::b` for src/a/b.rs at the crate root; crates under a directory are named
    after it (crates/foo-bar/src/x.rs -> foo_bar::x)."""
    stem = path[: -len(".rs")] if path.endswith(".rs") else path
    parts = stem.split("/")
    if "src" in parts:
        i = len(parts) - 1 - parts[::-1].index("src")
        crate = parts[i - 1].replace("-", "_") if i > 0 else "crate"
        rest = parts[i + 1:]
    else:
        crate, rest = "", parts
    if rest and rest[-1] == "mod":
        rest = rest[:-1]
    if rest and rest[-1] in ("lib", "main") and len(rest) == 1:
        rest = []
    return "::".join(p for p in ([crate] if crate else []) + rest if p)


def _jvm_dir(path: str) -> str:
    d = posixpath.dirname(path) + "/"
    roots = list(_JVM_ROOT.finditer(d))
    if roots:
        d = d[roots[-1].end():]
    return d.strip("/").replace("/", ".")


def declared_package(names: Iterable[str]) -> str | None:
    """The package a file declares, from its top-level package symbols' qualified names: the
    one, or what several share (`a.b` and `a.c` -> `a`; `a` and `b` -> "": each block's
    symbols carry their own package). None when it declares none."""
    shared: list[str] | None = None
    for name in names:
        parts = name.split(".")
        if shared is None:
            shared = parts
            continue
        n = 0
        while n < min(len(shared), len(parts)) and shared[n] == parts[n]:
            n += 1
        shared = shared[:n]
    return None if shared is None else ".".join(shared)


def file_module(path: str, language: str, packages: set[str], declared: str | None = None) -> FileModule:
    """The module of one file; `declared` is the package its top-level package symbols
    declare (`declared_package`), None when they declare none."""
    sep = separator(language)
    if language == "python":
        module, package = python_module(path, packages)
        return FileModule(path, language, module, package, sep)
    if language == "go":
        d = posixpath.dirname(path)
        return FileModule(path, language, d, d, sep)
    if language == "rust":
        module = rust_module(path)
        return FileModule(path, language, module, module, sep)
    if language in JS_LANGUAGES:
        module = _strip_js(path)
        return FileModule(path, language, module, posixpath.dirname(path), sep)
    if language in DECLARED_PACKAGE:
        module = declared if declared is not None else (_jvm_dir(path) if language != "php" else "")
        return FileModule(path, language, module, module, sep)
    return FileModule(path, language, "", "", sep)


def fq_name(module: str, qualified_name: str, sep: str) -> str:
    """module + sep + qualified name, unless the qualified name already carries the module."""
    if not module or qualified_name == module or qualified_name.startswith(module + sep):
        return qualified_name
    return f"{module}{sep}{qualified_name}"


def resolve_python_relative(spec: str, package: str) -> str:
    """`..mod` seen in package `a.b.c` -> `a.b.mod`; absolute names pass through."""
    if not spec.startswith("."):
        return spec
    dots = len(spec) - len(spec.lstrip("."))
    base = package.split(".") if package else []
    base = base[: max(0, len(base) - (dots - 1))]
    rest = spec[dots:]
    return ".".join([*base, rest] if rest else base)


def resolve_js_relative(spec: str, package: str) -> str:
    """`./util` seen in directory `src/app` -> `src/app/util`; bare specifiers unchanged."""
    if not spec.startswith("."):
        return spec
    return _strip_js(posixpath.normpath(posixpath.join(package or ".", spec)).lstrip("./") or ".")


def key(name: str) -> str:
    """Separator-neutral lookup form of a name (`a::b`, `a\\b`, `a->b` -> `a.b`)."""
    return name.replace("::", ".").replace("\\", ".").replace("->", ".").strip(".")


@dataclass(frozen=True)
class ImportBinding:
    """What one import makes visible: `local` ("*" for a wildcard, "" for nothing) names
    `fq` (key form) in the importing file; `module` (key form) is the module it reads."""

    local: str
    fq: str
    module: str


_GO_MAJOR = re.compile(r"v[0-9]+")


def go_package(spec: str) -> str:
    """The package name a Go import path binds: its last segment, but a major version's
    (`github.com/go-chi/chi/v5` is package chi)."""
    parts = spec.split("/")
    return parts[-2] if len(parts) > 1 and _GO_MAJOR.fullmatch(parts[-1]) else parts[-1]


def go_import_dir(spec: str, roots: list[tuple[str, str]]) -> str:
    """The repository directory a Go import path names when it starts with the module path a
    go.mod declares (`roots`: (module path, its directory), longest first); else `spec`."""
    for module, directory in roots:
        if spec == module or spec.startswith(module + "/"):
            return posixpath.join(directory, spec[len(module):].lstrip("/")).rstrip("/") if directory \
                else spec[len(module):].lstrip("/")
    return spec


def _suffix_match(spec: str, modules: set[str]) -> str:
    parts = spec.split("/")
    for i in range(len(parts)):
        cand = "/".join(parts[i:])
        if cand in modules:
            return cand
    return spec


def import_binding(fm: FileModule, target: str, module: str, alias: str,
                   modules: set[str]) -> ImportBinding:
    """The binding of one import reference (as the extractor wrote it) in file `fm`.

    `modules` holds every module key of the manifest (for Go import paths, which carry the
    repository's own module prefix, and for namespace imports)."""
    lang = fm.language
    if lang in FILE_IMPORTS:
        return ImportBinding("", "", "")
    if lang == "python":
        if module and target != module:
            mod = resolve_python_relative(module, fm.package)
            if target == "*":
                return ImportBinding("*", mod, mod)
            return ImportBinding(alias or target.rsplit(".", 1)[-1], f"{mod}.{target}" if mod else target, mod)
        mod = resolve_python_relative(target, fm.package)
        return ImportBinding(alias or mod.split(".", 1)[0], mod if alias else mod.split(".", 1)[0], mod)
    if lang in JS_LANGUAGES:
        if not module and alias == "default":  # `export default name` (the extractor's form)
            return ImportBinding("default", f"{key(fm.module)}.{target}", key(fm.module))
        mod = resolve_js_relative(module or target, fm.package)
        if target == "*" and not alias and module:  # `export * from './x.js'`: re-exports all
            return ImportBinding("*", mod, mod)
        if not module or target in ("", "*", module):
            return ImportBinding(alias or mod.rsplit("/", 1)[-1], mod, mod)
        return ImportBinding(alias or target, f"{mod}.{target}", mod)
    if lang == "go":
        spec = (module or target).strip('"')
        mod = _suffix_match(spec, modules)
        return ImportBinding(alias or go_package(spec), mod, mod)
    full = key(target if not module or key(target).startswith(key(module)) else f"{module}.{target}")
    if lang == "rust":
        crate = key(fm.module).split(".", 1)[0] if fm.module else "crate"
        head, _, rest = full.partition(".")
        if head == "crate":
            full = f"{crate}.{rest}" if rest else crate
        elif head in ("self", "super"):
            base = key(fm.module).split(".")
            base = base[:-1] if head == "super" else base
            full = ".".join([*base, rest] if rest else base)
        elif fm.module and f"{key(fm.module)}.{head}" in modules:
            # `use child::f`: a child module's file (child.rs or child/mod.rs) is a module
            full = f"{key(fm.module)}.{full}"
    if full.endswith(".*") or full == "*":
        mod = full[:-2]
        return ImportBinding("*", mod, mod)
    if full in modules and lang in DECLARED_PACKAGE:
        return ImportBinding("*", full, full)
    mod = full.rsplit(".", 1)[0] if "." in full else full
    return ImportBinding(alias or full.rsplit(".", 1)[-1], full, full if full in modules else mod)


def include_file(spec: str, from_path: str, language: str, by_name: dict[str, list[str]]) -> str:
    """The repository file an include/require names: next to the including file first, else
    the path ending with it that shares the longest directory prefix with the includer; ""
    when none (a system header, a gem)."""
    spec = spec.strip().strip('"<>\'').lstrip("./") if not spec.startswith("../") else spec.strip()
    here = posixpath.dirname(from_path)
    best, best_score = "", -1
    for ext in FILE_IMPORTS.get(language, ("",)):
        want = spec + ext
        for cand in by_name.get(posixpath.basename(want), ()):
            if cand == posixpath.normpath(posixpath.join(here, want)):
                return cand
            if cand == want or cand.endswith("/" + want):
                score = len(posixpath.commonpath([here, posixpath.dirname(cand)]))
                if score > best_score:
                    best, best_score = cand, score
    return best
