"""The statements of the PostgreSQL thread store (majlis.threads_pg): thread locks
with their fencing token, request claims, the fenced commit and its log rows.

Each is one round trip; the comments say what it returns and when it writes.
Placeholders are psycopg's ``%s`` except where a caller formats ``{live}`` or
``{rows}`` in first.
"""

from __future__ import annotations

REQ_COLS = ("tenant, user_id, request_id, thread_id, content_hash, new_thread, done, turn_id,"
             " events, result, checkpoint_id")
REQ_KEY = "tenant = %s AND user_id = %s AND request_id = %s"
LIVE = "created_at >= now() - make_interval(secs => %s)"


COLS = "thread_id, tenant, user_id, title, created_at, updated_at, turn_count"

# Takes the thread's advisory lock and, only if it got it, bumps the fencing
# token — one round trip. The volatile CTE runs exactly once; ``epoch`` is NULL
# when the lock was not taken or the thread has no row.
LOCK_AND_BUMP = (
    "WITH l AS (SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS got),"
    " b AS (UPDATE diwaniya_threads SET lease_epoch = lease_epoch + 1"
    " WHERE thread_id = %s AND (SELECT got FROM l) RETURNING lease_epoch)"
    " SELECT (SELECT got FROM l), (SELECT lease_epoch FROM b)")


# The same for a continuing turn, with the ownership check folded in: the lock
# is tried only on a thread this user owns (``mine``), so a thread of another
# user is never locked and the turn needs no SELECT of its own before this one.
# ``{live}`` hides an expired thread (``_live``), exactly as ``get`` does.
LOCK_OWNED_AND_BUMP = (
    "WITH o AS (SELECT user_id = %s AS mine FROM diwaniya_threads"
    " WHERE tenant = %s AND thread_id = %s{live}),"
    " l AS (SELECT CASE WHEN (SELECT mine FROM o)"
    " THEN pg_try_advisory_lock(%s, hashtext(%s)) ELSE false END AS got),"
    " b AS (UPDATE diwaniya_threads SET lease_epoch = lease_epoch + 1"
    " WHERE thread_id = %s AND (SELECT got FROM l) RETURNING lease_epoch)"
    " SELECT (SELECT got FROM l), (SELECT lease_epoch FROM b),"
    " coalesce((SELECT mine FROM o), false)")


# Records a request id; an expired record of the same id is overwritten as if
# deleted. Returns the row only when this statement recorded it.
CLAIM = (
    "INSERT INTO diwaniya_requests (tenant, user_id, request_id, thread_id, content_hash,"
    " new_thread) VALUES (%s,%s,%s,%s,%s,%s)"
    " ON CONFLICT (tenant, user_id, request_id) DO UPDATE SET thread_id = EXCLUDED.thread_id,"
    " content_hash = EXCLUDED.content_hash, new_thread = EXCLUDED.new_thread, done = false,"
    " turn_id = '', events = '[]', result = '{}', checkpoint_id = '', created_at = now()"
    " WHERE diwaniya_requests.created_at < now() - make_interval(secs => %s)"
    f" RETURNING {REQ_COLS}")
# The same, and the new conversation's thread row only if the request was recorded
# (so a retry of a first message finds the thread the first attempt made).
CLAIM_NEW_THREAD = (
    f"WITH claim AS ({CLAIM}),"
    f" thread AS (INSERT INTO diwaniya_threads ({COLS})"
    " SELECT %s,%s,%s,%s,%s,%s,%s WHERE EXISTS (SELECT 1 FROM claim))"
    " SELECT * FROM claim")


# A new thread (its id generated for this turn): the lock, and the row inserted
# with the first fencing token (1) only if the lock was taken.
LOCK_AND_CREATE = (
    "WITH l AS (SELECT pg_try_advisory_lock(%s, hashtext(%s)) AS got),"
    f" c AS (INSERT INTO diwaniya_threads ({COLS}, lease_epoch)"
    " SELECT %s,%s,%s,%s,%s,%s,%s,1 WHERE (SELECT got FROM l) RETURNING lease_epoch)"
    " SELECT (SELECT got FROM l), (SELECT lease_epoch FROM c)")


# The fenced registry update: matches (and row-locks) the thread only while the
# turn's token is still its lease_epoch.
COMMIT_HEAD = (
    "UPDATE diwaniya_threads SET updated_at = greatest(updated_at, %s),"
    " turn_count = turn_count + %s, head_checkpoint_id = %s, active_at = now(),"
    " title = CASE WHEN title = '' THEN %s ELSE title END"
    " WHERE thread_id = %s AND lease_epoch = %s RETURNING 1")
# Finishes the request record, only if the fence matched (a CTE beside ``head``).
FINISH_REQUEST = (
    "req AS (UPDATE diwaniya_requests SET done = true, turn_id = %s, events = %s,"
    f" result = %s, checkpoint_id = %s WHERE {REQ_KEY} AND EXISTS (SELECT 1 FROM head))")


# The turn log's closing rows (majlis.turn_log), only if the fence matched.
LOG_ROW = "(%s::text,%s::text,%s::text,%s::integer,%s::text,%s::float8,%s::text)"
LOG = ("log AS (INSERT INTO diwaniya_turn_events"
        " (tenant, thread_id, turn_id, seq, user_id, at, body)"
        " SELECT * FROM (VALUES {rows}) AS v WHERE EXISTS (SELECT 1 FROM head)"
        " ON CONFLICT DO NOTHING)")


# The turn's first event-log row (majlis.turn_log), written by the lock
# statement it is appended to only if that statement took the lock: the first
# event costs no round trip of its own (every lock statement ends in this SELECT).
LOCK_SELECT = " SELECT (SELECT got FROM l)"
LOG_FIRST = (", lf AS (INSERT INTO diwaniya_turn_events"
              " (tenant, thread_id, turn_id, seq, user_id, at, body)"
              f" SELECT * FROM (VALUES {LOG_ROW}) AS v WHERE (SELECT got FROM l)"
              " ON CONFLICT DO NOTHING)")


def logging_first(sql: str) -> str:
    """``sql`` (a lock statement) that also writes the first log row when it locks."""
    head, sep, tail = sql.rpartition(LOCK_SELECT)
    assert sep, "every lock statement ends in its SELECT of l.got"
    return head + LOG_FIRST + sep + tail
