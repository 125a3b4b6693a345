"""Domain ⇄ wire conversion for ``diwaniya.v1`` (no logic beyond field mapping)."""

from __future__ import annotations

from datetime import UTC, datetime

from google.protobuf.timestamp_pb2 import Timestamp

from diwaniya.v1 import conversations_pb2 as pb
from majlis import events as ev
from majlis.approvals import ApprovalRequest
from majlis.engine import ThreadView
from majlis.requests import TurnRequest
from majlis.threads import ThreadRow

_REGISTER = {pb.REGISTER_UNSPECIFIED: "", pb.REGISTER_MSA: "msa", pb.REGISTER_DIALECT: "dialect"}


def turn_request(msg: pb.SendMessageRequest, tenant: str) -> TurnRequest:
    client_time = None
    if msg.HasField("client_time"):
        client_time = _from_timestamp(msg.client_time)
    return TurnRequest(
        tenant=tenant, user_id=msg.user_id, text=msg.text, thread_id=msg.thread_id,
        request_id=msg.request_id, country=msg.country, timezone=msg.timezone,
        client_time=client_time, register=_REGISTER.get(msg.register, "?"),
    )


def approval_request(msg: pb.Approval, tenant: str) -> ApprovalRequest:
    return ApprovalRequest(tenant=tenant, user_id=msg.user_id, thread_id=msg.thread_id,
                           call_id=msg.call_id, approved=msg.approved,
                           request_id=msg.request_id)


def _from_timestamp(ts: Timestamp) -> datetime:
    # Timestamp.ToDatetime raises on values beyond year 9999; let the calendar
    # range check produce the caller-facing message for anything out of range.
    try:
        return ts.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError):
        return datetime.max.replace(tzinfo=UTC)


def timestamp(value: datetime) -> Timestamp:
    ts = Timestamp()
    ts.FromDatetime(value)
    return ts


def turn_event(envelope: ev.Envelope) -> pb.TurnEvent:
    out = pb.TurnEvent(thread_id=envelope.thread_id, turn_id=envelope.turn_id, seq=envelope.seq)
    e = envelope.event
    match e:
        case ev.TurnStarted():
            out.turn_started.CopyFrom(
                pb.TurnStarted(request_id=e.request_id, user_text=e.user_text))
        case ev.PhaseChanged():
            out.phase_changed.CopyFrom(
                pb.PhaseChanged(previous=e.previous, current=e.current, new_cycle=e.new_cycle))
        case ev.TextDelta():
            # Most events of a turn are words: set the field in place, no temporary message.
            out.text_delta.SetInParent()
            out.text_delta.text = e.text
        case ev.ToolCall():
            out.tool_call.CopyFrom(
                pb.ToolCall(call_id=e.call_id, name=e.name, arguments_json=e.arguments_json))
        case ev.ToolResult():
            out.tool_result.CopyFrom(pb.ToolResult(call_id=e.call_id, name=e.name, ok=e.ok,
                                                   content_json=e.content_json, error=e.error))
        case ev.ApprovalRequired():
            out.approval_required.CopyFrom(pb.ApprovalRequired(
                call_id=e.call_id, name=e.name, arguments_json=e.arguments_json, reason=e.reason))
        case ev.MemoryCited():
            out.memory_cited.CopyFrom(pb.MemoryCited(
                memory_id=e.memory_id, kind=e.memory_kind, title=e.title, snippet=e.snippet,
                score=e.score, quoted=e.quoted))
        case ev.Usage():
            out.usage.CopyFrom(pb.Usage(model=e.model, prompt_tokens=e.prompt_tokens,
                                        completion_tokens=e.completion_tokens, cost_usd=e.cost_usd))
        case ev.Handoff():
            out.handoff.CopyFrom(pb.Handoff(summary_ar=e.summary_ar, reason=e.reason))
        case ev.TurnCompleted():
            out.turn_completed.CopyFrom(pb.TurnCompleted(
                text=e.text, phase=e.phase, dialect=e.dialect,
                dialect_confidence=e.dialect_confidence, script=e.script,
                checkpoint_id=e.checkpoint_id, replayed=e.replayed,
                message_dialect=e.message_dialect,
                message_dialect_confidence=e.message_dialect_confidence,
                reply_register=e.reply_register, safety_flags=e.safety_flags.split()))
        case ev.Queued():
            out.queued.CopyFrom(pb.Queued(reason=e.reason, position=e.position))
        case ev.TurnError():
            out.error.CopyFrom(pb.Error(code=e.code, message=e.message, retryable=e.retryable,
                                        reason=e.code.upper()))
    return out


def thread(view: ThreadView) -> pb.Thread:
    row = view.row
    handoff = view.handoff
    out = pb.Thread(
        thread_id=row.thread_id, user_id=row.user_id, phase=view.phase, dialect=view.dialect,
        created_at=timestamp(row.created_at), updated_at=timestamp(row.updated_at),
        prompt_tokens=int(view.usage.get("prompt_tokens", 0)),
        completion_tokens=int(view.usage.get("completion_tokens", 0)),
        cost_usd=float(view.usage.get("cost_usd", 0.0)),
        messages=[
            pb.Message(role=m.role, text=m.text, turn_id=m.turn_id, phase=m.phase,
                       dialect=m.dialect, created_at=timestamp(m.at))
            for m in view.messages
        ],
        handed_off=bool(handoff), handoff_reason=handoff.get("reason", ""),
        handoff_summary_ar=handoff.get("summary_ar", ""),
    )
    if view.summary is not None:
        out.history_summary = view.summary.text
        out.folded_turns = view.summary.turns
        out.history_summary_method = view.summary.method
    if handoff.get("at"):
        out.handed_off_at.CopyFrom(timestamp(datetime.fromisoformat(handoff["at"])))
    return out


def summary(row: ThreadRow) -> pb.ThreadSummary:
    return pb.ThreadSummary(thread_id=row.thread_id, created_at=timestamp(row.created_at),
                            updated_at=timestamp(row.updated_at), title=row.title,
                            turn_count=row.turn_count)
