"""Settings that would fail every turn are refused at start-up, with the variable named."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from service import Settings
from service.cli import main


@pytest.mark.parametrize("zone", ["Mars/Olympus", "Asia/", "../../etc/localtime", ""])
def test_bad_default_timezone_is_refused(zone: str) -> None:
    with pytest.raises(ValidationError, match="IANA time zone"):
        Settings(default_timezone=zone)


def test_good_default_timezone_is_kept() -> None:
    assert Settings(default_timezone="Asia/Riyadh").default_timezone == "Asia/Riyadh"


def test_cli_names_the_variable(monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DIWANIYA_DEFAULT_TIMEZONE", "Kuwait/Time")
    assert main(["migrate"]) == 2
    err = capsys.readouterr().err
    assert "DIWANIYA_DEFAULT_TIMEZONE" in err and "IANA" in err
