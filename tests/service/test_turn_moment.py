"""One calendar reading per turn: the engine's, handed to the phase step.

The engine reads the calendar when it validates a message (a client_time
outside the Hijri table is refused before anything is written); the phase
step used to read it again for the same instant, timezone and country. Now
the engine's moment travels in the turn's input (never checkpointed).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from majlis.culture import FixedClock, Moment, SeasonCalendar
from majlis.persistence import checkpoint_serde
from majlis.records import TurnInput
from tests.service.conftest import collect

# 18 Ramadan 1448 and Kuwait's national day: the reply's greeting depends on the moment.
RAMADAN_MORNING = datetime(2027, 2, 25, 6, tzinfo=UTC)


class CountingClock:
    """A :class:`majlis.culture.Clock` stopped at ``at`` that counts its readings."""

    def __init__(self, at: datetime) -> None:
        self._clock = FixedClock(at)
        self.calls = 0

    def now(self) -> datetime:
        self.calls += 1
        return self._clock.now()


@pytest.fixture
def moments(monkeypatch: pytest.MonkeyPatch) -> list[Moment]:
    """Every moment any calendar computes from here on (the real computation, counted)."""
    made: list[Moment] = []
    real = SeasonCalendar.moment

    def counted(self: SeasonCalendar, at: datetime, *, tz: ZoneInfo,
                country: str | None) -> Moment:
        made.append(real(self, at, tz=tz, country=country))
        return made[-1]

    monkeypatch.setattr(SeasonCalendar, "moment", counted)
    return made


async def test_a_turn_reads_the_clock_and_the_calendar_once(
        run_service: Any, moments: list[Moment]) -> None:
    clock = CountingClock(RAMADAN_MORNING)
    async with run_service(clock=clock) as svc:
        clock.calls = 0  # only the turn's own readings
        events = await collect(svc.client.send("السلام عليكم", user_id="u1", country="KW"))
    done = events[-1].turn_completed
    assert clock.calls == 1
    assert len(moments) == 1
    assert moments[0].local.tzinfo == ZoneInfo("Asia/Kuwait") and moments[0].country == "KW"
    # The engine's moment is the one the reply was composed with: «رمضان كريم».
    assert "رمضان" in done.text, done.text


async def test_a_client_time_sets_the_moment_and_the_clock_is_not_read(
        run_service: Any, moments: list[Moment]) -> None:
    clock = CountingClock(datetime(2026, 11, 1, 7, 30, tzinfo=UTC))  # no season
    async with run_service(clock=clock) as svc:
        clock.calls = 0
        events = await collect(svc.client.send("السلام عليكم", user_id="u1", country="KW",
                                               client_time=RAMADAN_MORNING))
    assert clock.calls == 0
    assert [m.utc for m in moments] == [RAMADAN_MORNING]
    assert "رمضان" in events[-1].turn_completed.text


def test_the_moment_is_not_checkpointed() -> None:
    """The turn's input is written as before: the moment adds nothing to a checkpoint
    and an input read back from one has none (the phase step would compute it)."""
    serde = checkpoint_serde()
    moment = SeasonCalendar().moment(RAMADAN_MORNING, tz=ZoneInfo("Asia/Kuwait"), country="KW")
    bare = TurnInput(turn_id="t", tenant="default", user_id="u", thread_id="th",
                     at=RAMADAN_MORNING, tz="Asia/Kuwait", text="السلام عليكم", country="KW")
    held = replace(bare, moment=moment)
    assert serde.dumps_typed({"input": held}) == serde.dumps_typed({"input": bare})
    back = serde.loads_typed(serde.dumps_typed({"input": held}))["input"]
    assert back == bare and back.moment is None
