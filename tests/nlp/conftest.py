"""Make ``import nlp`` mean the package, not this test folder.

Under pytest's default ``prepend`` import mode, ``tests/`` (the folder of the
root conftest) is put on ``sys.path``, so ``tests/nlp`` would shadow the real
``nlp`` package as a namespace package.  Importing the real one first, with
``tests/`` temporarily off the path, pins it in ``sys.modules``.  (Not needed
under ``--import-mode=importlib``; harmless there.)
"""

from __future__ import annotations

import sys
from pathlib import Path

_TESTS = str(Path(__file__).resolve().parents[1])
_saved = list(sys.path)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(_TESTS)]
try:
    if "nlp" in sys.modules and getattr(sys.modules["nlp"], "__file__", None) is None:
        del sys.modules["nlp"]
    import nlp  # noqa: F401
finally:
    sys.path[:] = _saved
