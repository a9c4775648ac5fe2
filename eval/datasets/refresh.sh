#!/usr/bin/env bash
# Re-mine the committed eval datasets and re-record the reports the CI gate compares against
# (tests/eval/test_ci_gate.py). Run from the repository root with codeagent installed; needs
# universal-ctags. Re-record the reports (not the datasets) after a deliberate ranking change.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=eval/datasets
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [ "${1:-}" != "--reports-only" ]; then
  codeagent eval --repo . --dataset commits --limit 10 --seed 1 --modes bm25-file --embedder none --save-dataset "$work/own" --workdir "$work/w" -q >/dev/null
  codeagent eval --repo . --dataset definitions --dataset descriptions --limit 15 --seed 1 \
    --modes bm25-file --embedder none --save-dataset "$work/own" --workdir "$work/w" -q >/dev/null
  for f in commits definitions descriptions; do cp "$work/own/$f.jsonl" "$out/codeagent-$f.jsonl"; done
  python -c "from pathlib import Path; from codeagent.eval.samples import stdlib_package_repo; stdlib_package_repo('email', Path('$work/email'))"
  codeagent eval --repo "$work/email" --dataset definitions --dataset descriptions --limit 20 --seed 1 \
    --modes bm25-file --embedder none --save-dataset "$work/email-ds" --workdir "$work/we" -q >/dev/null
  for f in definitions descriptions; do cp "$work/email-ds/$f.jsonl" "$out/email-$f.jsonl"; done
fi
codeagent eval --repo . --dataset $out/codeagent-commits.jsonl --dataset $out/codeagent-definitions.jsonl \
  --dataset $out/codeagent-descriptions.jsonl --brief --out $out/baseline-codeagent.json --workdir "$work/w" -q
python -c "from pathlib import Path; from codeagent.eval.samples import stdlib_package_repo; stdlib_package_repo('email', Path('$work/email'))"
codeagent eval --repo "$work/email" --dataset $out/email-definitions.jsonl --dataset $out/email-descriptions.jsonl \
  --brief --out $out/baseline-email.json --workdir "$work/we" -q
