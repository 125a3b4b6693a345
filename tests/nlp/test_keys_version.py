"""nlp.KEYS_VERSION moves with the keys: a change to what some text keys as must
bump it, or upgraded stores would keep old keys (memory.rekey re-keys only when
the fingerprint differs).

The digest is of the built-in keys of ARCD passages (with titles) and 3,000
dialect tweets from ../shared/data.  When this fails after an intended change
to key output: bump KEYS_VERSION in nlp/keys.py (its comment lists versions)
and pin the digest printed in the failure under the new version.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from nlp import KEYS_VERSION, stem_and_surface_keys

# KEYS_VERSION → digest of the keys it gives the sample texts.
PINNED = {2: "d365d880936748a5", 3: "8be8a12dd7e6f038"}


def _sample(shared_data: Path) -> list[str]:
    texts = []
    for line in (shared_data / "qa_arcd.corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line:
            d = json.loads(line)
            texts += [d["title"], d["text"]]
    lines = (shared_data / "dialect_qcri_da_tweets.tsv").read_text(encoding="utf-8").splitlines()
    texts += [line.split("\t")[1] for line in lines[1:3001] if line.count("\t") >= 1]
    return texts


def test_key_output_is_the_one_pinned_for_this_keys_version(shared_data: Path) -> None:
    keys = [stem_and_surface_keys(t) for t in _sample(shared_data)]
    digest = hashlib.sha256(json.dumps(keys, ensure_ascii=False).encode()).hexdigest()[:16]
    assert KEYS_VERSION in PINNED, f"pin {KEYS_VERSION}: {digest!r} in PINNED"
    assert PINNED[KEYS_VERSION] == digest, (
        f"built-in key output changed ({digest}) but KEYS_VERSION is still {KEYS_VERSION}: "
        "bump it in nlp/keys.py so stores re-key on upgrade, and pin the new digest")
