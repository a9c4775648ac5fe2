"""Assembly: a manifest's shards into one DuckDB file and its vector files, keyed by the
manifest id (pipeline.py runs it; tables, term_postings, graph and ann write its parts)."""
