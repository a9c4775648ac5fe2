"""`codeagent eval`: retrieval quality scored on real repositories, with a regression gate.

Datasets are mined offline from git history and trees (commits, definitions, descriptions) or
brought as JSONL; every available search mode is scored side by side with a whole-file BM25
baseline the harness computes itself.
"""
