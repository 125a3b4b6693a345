"""What a fresh process builds before it reports ready, instead of in its first turn.

A turn reads process-wide tables that are parsed once, on first use: the
dialect → MSA bridge (``nlp/data/bridge.tsv``, some 4,200 lines, for the
knowledge-base query's expansion) and the cue reader's greetings and lexicon
(majlis.culture.cues). Built inside the first turn they are synchronous work
on the event loop — 50-100 ms on this 2-core machine, up to 250 ms in a burst —
that every other request arriving meanwhile waits behind: the first burst of
streams on a just-started replica (issue #11, ``ttfe_burst_*`` of
bench/load.py). :func:`warm_up` builds them in ``build_app``, so before the
engine exists and readiness goes SERVING (``DIWANIYA_WARM_ON_START``).

>>> warm_up()                                   # doctest: +SKIP
>>> dialect_to_msa("وين فرعكم؟")                 # doctest: +SKIP
['أين', …]
"""

from __future__ import annotations

from majlis.culture.cues import read_cues
from nlp.bridge import dialect_to_msa

# A support message in Gulf dialect: a greeting (the cue tables) and dialect
# support words (the bridge). What it reads is discarded; only the tables stay.
WARM_TEXT = "السلام عليكم، وين طلبي؟ ابي ارجع الغرض"


def warm_up() -> None:
    """Build the lazily parsed tables a turn reads (each cached for the process)."""
    read_cues(WARM_TEXT)
    dialect_to_msa(WARM_TEXT)
