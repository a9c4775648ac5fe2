"""What each resident structure of a long-lived reader costs: RSS and CPU time to load.

    python bench/resident.py REPO

Opens REPO's index as the server does (a long-lived view: `keep_text_in_memory`), then loads
the structures one by one, printing the RSS growth and the CPU seconds of each. RSS is read
after a garbage collection; Python's allocator keeps freed arenas, so a transient load peak
shows in the structure that caused it.
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
from codeagent.query.memtext import text_copy
from codeagent.query.ref_table import RefTable
from codeagent.query.symbol_table import SymbolTable

MIB = 1 << 20


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


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
             ("text copy", lambda: text_copy(view))]
    print(f"{'structure':<24}{'RSS +MiB':>10}{'CPU s':>8}")
    before = start
    for name, load in steps:
        cpu = time.process_time()
        load()
        gc.collect()
        cpu = time.process_time() - cpu
        now = rss()
        print(f"{name:<24}{(now - before) / MIB:>10.1f}{cpu:>8.2f}", flush=True)
        before = now
    print(f"{'total':<24}{(before - start) / MIB:>10.1f}   (RSS {before / MIB:.0f} MiB, load {os.getloadavg()[0]:.1f})")
    view.close()


if __name__ == "__main__":
    main()
