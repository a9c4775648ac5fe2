"""What each resident structure of a long-lived reader costs: RSS and CPU time to load.

    python bench/resident.py REPO

Opens REPO's index as the server does (a long-lived view: `keep_text_in_memory`), then loads
the structures one by one, printing the RSS growth and the CPU seconds of each. RSS is read
after a garbage collection; Python's allocator keeps freed arenas, so a transient load peak
shows in the structure that caused it. "anon" is the part that is not file-backed: the mapped
arrays' pages (shared, and dropped by a server after each request) are the difference.
"""

from __future__ import annotations

import argparse
import gc
import os
import time
from pathlib import Path

from codeagent.query.doctable import CHUNK_DOCS_SQL, doc_table
from codeagent.query.edge_table import EdgeTable
from codeagent.query.filepostings import FilePostings
from codeagent.query.index import open_index
from codeagent.query.grep import grep
from codeagent.query.ref_table import RefTable
from codeagent.query.symbol_table import SymbolTable

MIB = 1 << 20


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def anon() -> int:
    """Bytes of anonymous memory (Python objects, DuckDB, allocators): RSS less file-backed
    pages (libraries, mapped arrays; those are shared and can be dropped)."""
    with open("/proc/self/smaps_rollup") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("Anonymous:"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repo", type=Path)
    args = ap.parse_args()
    start = rss()
    view = open_index(args.repo)
    view.keep_text_in_memory = True
    steps = [("open view", lambda: None),
             ("symbol table", lambda: SymbolTable.load(view)),
             ("name index: prefix", lambda: SymbolTable.load(view).names.prefix("get")),
             ("name index: subtokens", lambda: SymbolTable.load(view).names.subtoken_names(["get", "x"])),
             ("name index: trigrams", lambda: SymbolTable.load(view).names.fuzzy_names("getattx", 1)),
             ("ref table", lambda: RefTable.load(view)),
             ("edge table", lambda: EdgeTable.load(view)),
             ("file postings", lambda: FilePostings.load(view)),
             ("chunk docs", lambda: doc_table(view, CHUNK_DOCS_SQL.format(where="TRUE"))),
             ("grep (texts scanned in place)", lambda: grep(view, r"^\s*raise \w+Error\(", max_results=10_000))]
    print(f"{'structure':<24}{'RSS +MiB':>10}{'anon +MiB':>10}{'CPU s':>8}")
    before, anon_before, anon_start = start, anon(), anon()
    for name, load in steps:
        cpu = time.process_time()
        load()
        gc.collect()
        cpu = time.process_time() - cpu
        now, anon_now = rss(), anon()
        print(f"{name:<24}{(now - before) / MIB:>10.1f}{(anon_now - anon_before) / MIB:>10.1f}{cpu:>8.2f}",
              flush=True)
        before, anon_before = now, anon_now
    print(f"{'total':<24}{(before - start) / MIB:>10.1f}{(anon_before - anon_start) / MIB:>10.1f}   "
          f"(RSS {before / MIB:.0f} MiB, load {os.getloadavg()[0]:.1f})")
    view.close()


if __name__ == "__main__":
    main()
