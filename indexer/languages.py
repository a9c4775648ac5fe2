"""Language detection by file name (pure). Names are tree-sitter-language-pack names."""

from __future__ import annotations

import posixpath

TEXT = "text"
MARKDOWN = "markdown"
RST = "rst"

_BY_EXTENSION = {
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".jsx": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    ".go": "go", ".rs": "rust", ".java": "java",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".hpp": "cpp", ".hh": "cpp", ".hxx": "cpp",
    ".ipp": "cpp", ".inl": "cpp",
    ".cs": "csharp", ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".php": "php",
    ".swift": "swift", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".sc": "scala",
    ".md": MARKDOWN, ".markdown": MARKDOWN, ".rst": RST,
    ".sh": "bash", ".bash": "bash", ".zsh": "bash",
    ".lua": "lua", ".pl": "perl", ".pm": "perl", ".r": "r", ".R": "r",
    ".hs": "haskell", ".ml": "ocaml", ".mli": "ocaml", ".ex": "elixir", ".exs": "elixir",
    ".erl": "erlang", ".hrl": "erlang", ".clj": "clojure", ".dart": "dart", ".zig": "zig",
    ".jl": "julia", ".nim": "nim", ".elm": "elm", ".fs": "fsharp", ".fsx": "fsharp",
    ".sql": "sql", ".html": "html", ".htm": "html", ".css": "css", ".scss": "scss",
    ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".xml": "xml",
    ".proto": "proto", ".vue": "vue", ".svelte": "svelte", ".tf": "hcl", ".hcl": "hcl",
    ".cmake": "cmake", ".m": "objc", ".mm": "objc", ".groovy": "groovy", ".gradle": "groovy",
    ".ps1": "powershell", ".vim": "vim", ".el": "elisp", ".f90": "fortran", ".v": "verilog",
    ".sv": "verilog", ".vhd": "vhdl", ".asm": "asm", ".s": "asm", ".S": "asm",
    ".ini": "ini", ".cfg": "ini", ".diff": "diff", ".patch": "diff", ".tex": "latex",
    ".txt": TEXT, ".rest": RST,
}

_BY_NAME = {
    "Makefile": "make", "makefile": "make", "GNUmakefile": "make", "Dockerfile": "dockerfile",
    "CMakeLists.txt": "cmake", "Rakefile": "ruby", "Gemfile": "ruby", "BUILD": "starlark",
    "BUILD.bazel": "starlark", "WORKSPACE": "starlark", ".bashrc": "bash",
}

# Languages with full definition + reference extraction (the rest get generic rules).
FULL_LANGUAGES = (
    "python", "javascript", "typescript", "tsx", "go", "rust", "java", "c", "cpp", "csharp",
    "ruby", "php", "swift", "kotlin", "scala",
)


def detect_language(path: str) -> str:
    """Language of a repository-relative POSIX path; TEXT when nothing matches."""
    name = posixpath.basename(path)
    if name in _BY_NAME:
        return _BY_NAME[name]
    _, ext = posixpath.splitext(name)
    return _BY_EXTENSION.get(ext) or _BY_EXTENSION.get(ext.lower()) or TEXT
