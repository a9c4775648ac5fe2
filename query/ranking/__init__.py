"""How a search is ranked (`search.search`, mode auto), in the order it happens:

1. The query is read: `query/intent.py` says what it looks like (identifier, path, error,
   words), `query/terms.py` makes its terms.
2. Retrievers answer each an ordered list (`search.RETRIEVERS`, in `query/`): symbols, text
   (`fulltext.py`: BM25 in SQL), paths, and vectors when the index has them (regex answers
   alone). Every BM25 is `bm25.py`'s.
3. Fusion (`fuse.py`): weighted reciprocal-rank fusion of those lists, the weights chosen
   by the intent; an identifier's or a path's own hits come first.
4. For a task or an error in words the fused hits are answered in the order of a file
   ranking (`files.py`): each candidate file's features (body BM25, path and name fields,
   the history field `history.py`, its chunk hits, a file the query names, its role)
   scored by the shipped model (`learned.py`, `file_model.json`), else a hand-set score.
5. `--group symbols`: the functions of the best files (`functions.py`).
"""
