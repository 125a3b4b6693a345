"""The serving process's garbage-collector policy, set once the app is built.

Start-up leaves a large heap that lives as long as the process: the dialect
and lexicon tables, the compiled graph, grpc, OpenTelemetry, the pools. Python's
cyclic collector still re-walks all of it in every full (generation 2)
collection, and the allocation rate of a busy server triggers one every few
seconds: measured under bench/load.py (32 streams, one worker), 150–350 ms per
full collection, during which the event loop serves nothing — a time-to-first-
event p99 spike for every stream at once, and about 1 ms of CPU per turn.

:func:`settle` moves everything alive after start-up to the permanent
generation (``gc.freeze``), which collections never walk; the objects are not
leaked — they were never going to be collected while the process serves.
Generation 0 is collected every :data:`GEN0_THRESHOLD` net allocations instead
of 700: a turn allocates a few thousand short-lived containers, most of them
dead before the next collection, so fewer collections promote fewer of them.
"""

from __future__ import annotations

import gc

# Net container allocations between generation-0 collections (CPython's default: 700).
GEN0_THRESHOLD = 10_000


def settle() -> None:
    """Collect once, freeze what survived, and collect generation 0 less often.

    Call after start-up, before serving (``diwaniya serve`` does, in each worker).

    >>> settle()  # doctest: +SKIP  (it would freeze the caller's heap)
    >>> gc.get_freeze_count() > 0, gc.get_threshold()[0]  # doctest: +SKIP
    (True, 10000)
    """
    gc.collect()
    gc.freeze()
    _, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(GEN0_THRESHOLD, gen1, gen2)
