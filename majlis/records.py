"""The records of one turn: what it reads, what each step produces, what it leaves behind.

A turn flows ``TurnInput`` → ``Analysis`` (analyse) → ``Setting`` (phase) →
``Recollection`` (recall) → ``Reply`` (respond, hold or settle) →
``CompletedTurn`` (remember). Each is a frozen, slotted dataclass held in its
own channel of :class:`majlis.state.ThreadState`; a node reads the records
before it and returns its own, never a dict of string keys.

Persistence: LangGraph's serde writes a dataclass as (module, class, fields)
and rebuilds it by calling the class (the types are on the savers' allowlist,
:data:`CHECKPOINT_TYPES`). Msgpack has no tuple, so sequences come back as
lists: every record turns them back into tuples in ``__post_init__``. A type
the serde refuses (strict mode, or a record renamed later) comes back as the
dict of its fields; the ``read`` class methods accept that form too, and the
dict shapes that checkpoints written before these records hold
(``pending_approvals`` entries, ``messages``), so existing threads continue.

    >>> done = CompletedTurn(turn_id="t1", reply="وعليكم السلام", phase="greeting",
    ...                      dialect="gulf", dialect_confidence=0.8)
    >>> done.to_event("c1").text, done.to_event("c1", replayed=True).replayed
    ('وعليكم السلام', True)
    >>> CompletedTurn.from_result(done.to_result(), turn_id="t1") == done
    True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, ClassVar, Literal, TypeVar

from majlis.culture import Cues, Moment
from majlis.events import TurnCompleted, TurnStarted, event_to_dict
from majlis.models import Recalled

Event = dict[str, Any]  # a majlis.events event in its stored form (event_to_dict)
R = TypeVar("R")


class _Record:
    """Base of every record: how the checkpoint serde writes it.

    ``_asdict`` sends a record down LangGraph's namedtuple branch, which writes
    exactly what its dataclass branch writes — (module, class, fields), rebuilt
    by calling the class — but is reached before that branch's
    ``isinstance(obj, SendProtocol)``, a runtime Protocol check that cost ~50 µs
    per record on Python 3.11. Fields in ``_foreign`` hold types that are not
    ours (``Cues``, ``Recalled``): they are written as plain dicts, which the
    record turns back into types in ``__post_init__``. Fields in ``_transient``
    are not written at all: they hold what only the running turn uses, and come
    back from a checkpoint as their defaults.
    """

    __slots__ = ()
    _foreign: ClassVar[tuple[str, ...]] = ()
    _transient: ClassVar[tuple[str, ...]] = ()

    def _asdict(self) -> dict[str, Any]:
        names = _NAMES.get(type(self))
        if names is None:
            names = _NAMES[type(self)] = tuple(
                f.name for f in fields(self)  # type: ignore[arg-type]
                if f.name not in self._transient)
        data = {name: getattr(self, name) for name in names}
        for name in self._foreign:
            data[name] = _plain(data[name])
        return data


_NAMES: dict[type[Any], tuple[str, ...]] = {}


def _plain(value: Any) -> Any:
    """A foreign dataclass (or a sequence of them) as plain dicts and lists."""
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, Cues | Recalled):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    return value


def _when(value: datetime | str) -> datetime:
    return value if isinstance(value, datetime) else datetime.fromisoformat(value)


def need(value: R | None, what: str) -> R:
    """The record a node depends on; its absence is a wiring error in the graph."""
    if value is None:
        raise RuntimeError(f"the graph ran a node that needs {what} before {what} was made")
    return value


def _tuple(items: Iterable[Any] | None) -> tuple[Any, ...]:
    return tuple(items or ())


def _fields_of(cls: type[Any], data: Mapping[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in data.items() if k in names}


def _set(record: Any, name: str, value: Any) -> None:
    object.__setattr__(record, name, value)  # frozen: only __post_init__ normalises


def _cues(value: Cues | Mapping[str, Any]) -> Cues:
    """Cues as a record again: from the serde (lists for tuples) or a refused type (a dict)."""
    data: Mapping[str, Any] = value if isinstance(value, Mapping) else {
        f.name: getattr(value, f.name) for f in fields(value)}
    if isinstance(value, Cues) and all(not isinstance(v, list) for v in data.values()):
        return value
    normalised: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v
                                  for k, v in _fields_of(Cues, data).items()}
    return Cues(**normalised)


def _recalled(value: Recalled | Mapping[str, Any]) -> Recalled:
    return value if isinstance(value, Recalled) else Recalled(**_fields_of(Recalled, value))


@dataclass(frozen=True, slots=True)
class ApprovalInput(_Record):
    """The caller's answer to an ``approval_required`` event."""

    call_id: str
    approved: bool


@dataclass(frozen=True, slots=True)
class TurnInput(_Record):
    """What the engine hands the graph: a message (``text``) or an approval.

    ``text`` is already cleaned and masked (majlis.requests); ``deadline`` is
    on the ``time.monotonic()`` clock; ``at`` is aware. ``moment`` is the
    calendar's reading of ``at`` that the engine made when it validated the
    request, so the phase step does not compute it a second time; it is never
    checkpointed (a checkpoint's turn records are not read again, majlis.state),
    so an input rebuilt from one has None and the phase step computes it.
    """

    _transient: ClassVar[tuple[str, ...]] = ("moment",)

    turn_id: str
    tenant: str
    user_id: str
    thread_id: str
    at: datetime
    tz: str
    text: str = ""
    request_id: str = ""
    country: str = ""
    register: str = ""
    deadline: float | None = None
    approval: ApprovalInput | None = None
    moment: Moment | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        _set(self, "at", _when(self.at))
        if isinstance(self.approval, Mapping):
            _set(self, "approval", ApprovalInput(**_fields_of(ApprovalInput, self.approval)))

    def started(self) -> TurnStarted:
        return TurnStarted(user_text=self.text, request_id=self.request_id)


@dataclass(frozen=True, slots=True)
class Analysis(_Record):
    """What the message says (cues) and in which dialect (analyse).

    ``dialect_thread`` is the thread's evidence without the country prior
    (:meth:`nlp.dialect_thread.ThreadDialect.to_dict`); ``message_dialect`` is
    "" when the message has no regional evidence (a shared greeting, a number).
    """

    script: str
    dialect: str
    dialect_confidence: float
    cues: Cues = field(default_factory=Cues)
    message_dialect: str = ""
    message_dialect_confidence: float = 0.0
    dialect_weight: float = 0.0
    dialect_thread: dict[str, Any] = field(default_factory=dict)
    # No other region has more of the thread's marker words and country than
    # ``dialect`` (ThreadDialect.backed): without it the reply does not mirror.
    dialect_backed: bool = True
    _foreign: ClassVar[tuple[str, ...]] = ("cues",)

    def __post_init__(self) -> None:
        _set(self, "cues", _cues(self.cues))


@dataclass(frozen=True, slots=True)
class Setting(_Record):
    """Where the majlis is and how the reply should sound (phase).

    ``voice`` is the phrase voice of the reply (a region, "msa" or "neutral");
    ``reply_register`` is what the caller is told ("msa" | "dialect" | "neutral").
    """

    phase: str
    previous_phase: str
    new_cycle: bool
    cycle: int
    voice: str
    reply_register: str
    tone_prompt: str
    formality: str
    gender: str | None = None
    opening: str = ""
    closing: str = ""
    hijri: tuple[int, int, int] = (1, 1, 1)
    local_time: str = ""
    modifiers: tuple[str, ...] = ()
    events: tuple[Event, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "hijri", tuple(self.hijri))
        _set(self, "modifiers", _tuple(self.modifiers))
        _set(self, "events", _tuple(self.events))


@dataclass(frozen=True, slots=True)
class Recollection(_Record):
    """The user's facts and the knowledge-base chunks that bear on the message (recall)."""

    recalled: tuple[Recalled, ...] = ()
    events: tuple[Event, ...] = ()
    _foreign: ClassVar[tuple[str, ...]] = ("recalled",)

    def __post_init__(self) -> None:
        _set(self, "recalled", tuple(_recalled(r) for r in self.recalled or ()))
        _set(self, "events", _tuple(self.events))

    @property
    def facts(self) -> tuple[str, ...]:
        """The user's own facts (everything recalled that is not a document)."""
        return tuple(r.text for r in self.recalled if r.kind != "document")

    @property
    def documents(self) -> tuple[Recalled, ...]:
        return tuple(r for r in self.recalled if r.kind == "document")


@dataclass(frozen=True, slots=True)
class HeldCall(_Record):
    """A tool call waiting for the caller's approval (thread state ``pending_approvals``)."""

    name: str
    arguments_json: str = "{}"
    turn_id: str = ""

    @classmethod
    def read(cls, value: HeldCall | Mapping[str, Any]) -> HeldCall:
        """A held call from the state: a record, or the dict that older checkpoints hold."""
        return value if isinstance(value, HeldCall) else cls(**_fields_of(cls, value))


@dataclass(frozen=True, slots=True)
class ModelUsage(_Record):
    model: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0


@dataclass(frozen=True, slots=True)
class Reply(_Record):
    """The reply and what came with it (respond; hold and settle make one too).

    ``held`` are tool calls this turn put on hold for approval; ``settled`` the
    held call an approval turn ran or declined. ``support`` is the thread's
    support state after this message (None: unchanged), ``support_answered``
    the slots a bare answer («48213») filled.
    """

    text: str
    events: tuple[Event, ...] = ()
    usage: ModelUsage | None = None
    handoff: bool = False
    held: dict[str, HeldCall] = field(default_factory=dict)
    settled: str = ""
    support: dict[str, Any] | None = None
    support_answered: dict[str, str] = field(default_factory=dict)
    respond_s: float = 0.0

    def __post_init__(self) -> None:
        _set(self, "events", _tuple(self.events))
        _set(self, "held", {k: HeldCall.read(v) for k, v in (self.held or {}).items()})
        if isinstance(self.usage, Mapping):
            _set(self, "usage", ModelUsage(**_fields_of(ModelUsage, self.usage)))


@dataclass(frozen=True, slots=True)
class CompletedTurn(_Record):
    """The turn as it is committed and replayed: the one source of ``turn_completed``.

    ``events`` are the turn's events in their stored form, from ``turn_started``
    on, without the closing ``turn_completed`` (built by :meth:`to_event`).
    """

    turn_id: str
    reply: str
    phase: str
    dialect: str
    dialect_confidence: float = 0.0
    script: str = ""
    message_dialect: str = ""
    message_dialect_confidence: float = 0.0
    reply_register: str = ""
    events: tuple[Event, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "events", _tuple(self.events))

    def to_result(self) -> dict[str, Any]:
        """The request table's ``result`` column (the keys replays have always read)."""
        return {"reply": self.reply, "phase": self.phase, "dialect": self.dialect,
                "dialect_confidence": self.dialect_confidence, "script": self.script,
                "message_dialect": self.message_dialect,
                "message_dialect_confidence": self.message_dialect_confidence,
                "reply_register": self.reply_register}

    @classmethod
    def from_result(cls, result: Mapping[str, Any], *, turn_id: str,
                    events: Iterable[Event] = ()) -> CompletedTurn:
        """Inverse of :meth:`to_result`; records written before a field existed default it."""
        return cls(
            turn_id=turn_id, reply=result["reply"], phase=result["phase"],
            dialect=result["dialect"],
            dialect_confidence=result.get("dialect_confidence", 0.0),
            script=result.get("script", ""),
            message_dialect=result.get("message_dialect", ""),
            message_dialect_confidence=result.get("message_dialect_confidence", 0.0),
            reply_register=result.get("reply_register", ""), events=tuple(events))

    def to_event(self, checkpoint_id: str, *, replayed: bool = False) -> TurnCompleted:
        return TurnCompleted(
            text=self.reply, phase=self.phase, dialect=self.dialect,
            dialect_confidence=self.dialect_confidence, script=self.script,
            checkpoint_id=checkpoint_id, replayed=replayed,
            message_dialect=self.message_dialect,
            message_dialect_confidence=self.message_dialect_confidence,
            reply_register=self.reply_register)


@dataclass(frozen=True, slots=True)
class ThreadMessage(_Record):
    """One message of the thread's history (thread state ``messages``)."""

    role: Literal["user", "assistant"]
    text: str
    turn_id: str
    phase: str
    dialect: str
    at: datetime

    def __post_init__(self) -> None:
        _set(self, "at", _when(self.at))

    def to_state(self) -> dict[str, Any]:
        """The stored form: a plain dict (``at`` in ISO). The history is rewritten with
        every checkpoint and grows with the thread; msgpack packs dicts natively,
        ~50x faster than records through the serde's Python hooks."""
        return {"role": self.role, "text": self.text, "turn_id": self.turn_id,
                "phase": self.phase, "dialect": self.dialect, "at": self.at.isoformat()}

    @classmethod
    def read(cls, value: ThreadMessage | Mapping[str, Any]) -> ThreadMessage:
        """A message from the state: a record, or the dict older checkpoints hold
        (``at`` then an ISO string)."""
        return value if isinstance(value, ThreadMessage) else cls(**_fields_of(cls, value))


@dataclass(frozen=True, slots=True)
class ThreadSummary(_Record):
    """The running summary of the turns folded out of ``messages`` (majlis.compaction).

    ``turns`` counts every turn folded into it so far; ``through_turn`` is the
    last of them; ``method`` is ``"model"`` or ``"extractive"`` (the last fold's).

        >>> ThreadSummary("- العميل: وين طلبي رقم ****4411؟", turns=6, through_turn="t6",
        ...               method="extractive").turns
        6
    """

    text: str
    turns: int = 0
    through_turn: str = ""
    method: str = "extractive"

    @classmethod
    def read(cls, value: ThreadSummary | Mapping[str, Any] | None) -> ThreadSummary | None:
        """The summary from the state: a record, its dict (a refused type), or None."""
        if value is None or isinstance(value, ThreadSummary):
            return value
        return cls(**_fields_of(cls, value))


@dataclass(frozen=True, slots=True)
class ToolScope(_Record):
    """What the per-turn tool registry is bound to (majlis.toolkit.TurnTools).

    The tools are closures over it, so a tool never reaches another tenant's
    knowledge base or writes a fact onto another user.
    """

    tenant: str
    user_id: str
    thread_id: str
    turn_id: str
    text: str = ""
    dialect: str = ""
    phase: str = ""
    frustrated: bool = False
    facts: tuple[str, ...] = ()


def started_event(inp: TurnInput) -> Event:
    return event_to_dict(inp.started())


# Everything a checkpoint holds that is ours: the savers' msgpack allowlist.
CHECKPOINT_TYPES: tuple[type[Any], ...] = (
    ApprovalInput, TurnInput, Analysis, Setting, Recollection, HeldCall, ModelUsage, Reply,
    CompletedTurn, ThreadMessage, ThreadSummary, ToolScope,
)
