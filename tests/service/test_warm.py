"""A fresh app has built the tables a turn parses on first use, before it serves."""

from __future__ import annotations

from pathlib import Path

import pytest

from majlis.culture.cues import default_reader
from nlp.bridge import load_bridge
from service import Settings, build_app


@pytest.mark.parametrize("warm", [True, False])
async def test_build_app_warms_the_first_use_tables(tmp_path: Path, warm: bool) -> None:
    # Process-wide caches: emptied first, so what build_app did is what is seen.
    load_bridge.cache_clear()
    default_reader.cache_clear()
    app = await build_app(Settings(data_dir=tmp_path / "data", listen="127.0.0.1:0",
                                   warm_on_start=warm))
    try:
        built = (load_bridge.cache_info().currsize, default_reader.cache_info().currsize)
    finally:
        await app.close()
    assert built == ((1, 1) if warm else (0, 0))
