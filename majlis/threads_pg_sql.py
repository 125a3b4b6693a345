"""The statements of the PostgreSQL thread store (majlis.threads_pg): thread locks
with their fencing token, request claims, the fenced commit and its log rows.

Each is one round trip; the comments say what it returns and when it writes.
Placeholders are psycopg's ``%s`` except where a caller formats ``{live}`` or
``{rows}`` in first.
"""

from __future__ import annotations

# Advisory-lock key space: the first argument of the two-int form names our
# application ("DW" in ASCII) so that other software's advisory locks on the
# same database cannot collide with ours. Every thread lock and unlock uses it.
LOCK_CLASS = 0x4457

REQ_COLS = ("tenant, user_id, request_id, thread_id, content_hash, new_thread, done, turn_id,"
             " events, result, checkpoint_id")
REQ_KEY = "tenant = %s AND user_id = %s AND request_id = %s"
LIVE = "created_at >= now() - make_interval(secs => %s)"


COLS = "thread_id, tenant, user_id, title, created_at, updated_at, turn_count"

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


# The same on a continuing thread, only if the key's user owns it (``o``, with
# ``{live}`` as in ``get``): one row always, ``mine`` first, then the record's
# columns — NULL unless this statement recorded it.
CLAIM_OWNED = (
    "WITH o AS (SELECT user_id = %s AS mine FROM diwaniya_threads"
    " WHERE tenant = %s AND thread_id = %s{live}),"
    " claim AS (" + CLAIM.replace("VALUES (%s,%s,%s,%s,%s,%s)",
                                  "SELECT %s,%s,%s,%s,%s,%s WHERE (SELECT mine FROM o)") + ")"
    " SELECT coalesce((SELECT mine FROM o), false) AS mine, claim.*"
    " FROM (SELECT 1) AS one LEFT JOIN claim ON true")


# The fenced registry update: matches (and row-locks) the thread only while the
# turn's token is still its (lease_epoch, lease_owner) — the owner is a random
# uuid per acquisition, so a bump lost with an asynchronous commit can never be
# reissued to a later holder (docs/fencing.md).
COMMIT_HEAD = (
    "UPDATE diwaniya_threads SET updated_at = greatest(updated_at, %s),"
    " turn_count = turn_count + %s, head_checkpoint_id = %s, active_at = now(),"
    " title = CASE WHEN title = '' THEN %s ELSE title END"
    " WHERE thread_id = %s AND lease_epoch = %s AND lease_owner = %s RETURNING 1")
# The fenced commit's main query when it runs on the turn's own lock connection
# (majlis.threads_pg_commit): the commit releases the thread's advisory
# lock itself, instead of an unlock statement after it. Evaluated per row of
# ``head``, so only once the fenced UPDATE has matched and row-locked the
# thread: a successor that takes the advisory lock before this transaction
# commits still waits in its bump for that row (docs/fencing.md, "The unlock
# in the commit"). No row: fenced out, nothing written, the lock still held.
COMMIT_UNLOCK = "SELECT pg_advisory_unlock(%s, hashtext(%s)) FROM head"
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




# ------------------------------------------------------------------ locks
# A lock statement: the thread's advisory lock and, only if it got it, the
# fencing token — one round trip, named parameters (``%(thread)s``…). It commits
# asynchronously (``synchronous_commit`` off for this statement's transaction
# only, set_config's third argument): the token's safety does not need it on
# disk (docs/fencing.md, "Asynchronous lock commits"), and a turn's fenced
# commit, synchronous, flushes the WAL up to itself, this statement included.
_TRY = ("set_config('synchronous_commit', 'off', true) = 'off'"
        " AND pg_try_advisory_lock(%(cls)s, hashtext(%(thread)s))")
# Continuing turns: the token moves on (epoch + 1, a new owner).
_BUMP = ("b AS (UPDATE diwaniya_threads SET lease_epoch = lease_epoch + 1,"
         " lease_owner = %(lease_owner)s"
         " WHERE thread_id = %(thread)s AND (SELECT got FROM l)"
         " RETURNING lease_epoch, head_checkpoint_id = '' AS headless)")
# A new thread (its id generated for this turn, no request_id): its row is
# inserted with the first token only if the lock was taken.
_CREATE = (f"b AS (INSERT INTO diwaniya_threads ({COLS}, lease_epoch, lease_owner)"
           " SELECT %(thread)s, %(tenant)s, %(user)s, %(title)s, %(created_at)s,"
           " %(updated_at)s, %(turn_count)s, 1, %(lease_owner)s"
           " WHERE (SELECT got FROM l) RETURNING lease_epoch, true AS headless)")
# The ownership check of a continuing turn without request_id: the lock is
# tried only on a thread this user owns (``mine``), so another user's thread is
# never locked. ``{live}`` hides an expired thread, exactly as ``get`` does.
_OWNED = ("o AS (SELECT user_id = %(user)s AS mine FROM diwaniya_threads"
          " WHERE tenant = %(tenant)s AND thread_id = %(thread)s{live})")
# The request's re-check after locking (another replica may have finished it
# while this turn waited): FOR KEY SHARE makes READ COMMITTED read the record's
# latest committed version, not this statement's snapshot — which was taken
# before the lock, so a holder that committed and unlocked in between would be
# missed. Evaluated after ``b`` (it names it), so after the lock and after the
# bump has waited out a commit still in flight on the thread row.
_REQUEST = ("r AS (SELECT done FROM diwaniya_requests WHERE tenant = %(tenant)s"
            " AND user_id = %(user)s AND request_id = %(request_id)s"
            " AND created_at >= now() - make_interval(secs => %(window_s)s)"
            " AND EXISTS (SELECT 1 FROM b) FOR KEY SHARE)")
_NOT_DONE = " AND NOT coalesce((SELECT done FROM r), false)"
# The turn's first event-log row (majlis.turn_log), written only if the turn
# runs: it took the lock (and its request is not done already).
_LOG_FIRST = ("lf AS (INSERT INTO diwaniya_turn_events"
              " (tenant, thread_id, turn_id, seq, user_id, at, body)"
              " SELECT %(lf_tenant)s::text, %(lf_thread)s::text, %(lf_turn)s::text,"
              " %(lf_seq)s::integer, %(lf_user)s::text, %(lf_at)s::float8, %(lf_body)s::text"
              " WHERE (SELECT got FROM l){done} ON CONFLICT DO NOTHING)")
# The names of the first log row's parameters, in majlis.turn_log's Row order.
LOG_FIRST_PARAMS = ("lf_tenant", "lf_thread", "lf_turn", "lf_seq", "lf_user", "lf_at", "lf_body")


def lock_statement(*, create: bool = False, owned: str | None = None, request: bool = False,
                   log_first: bool = False) -> str:
    """The lock statement of one kind of turn; its row is always
    ``(got, lease_epoch, mine, done, headless)``: the lock was taken; the new
    token's epoch (NULL: not taken, or no thread row); the user owns the thread
    (true unless ``owned``, the ``{live}`` filter, asks); the request finished
    already; the thread has no committed checkpoint (``head_checkpoint_id`` empty,
    read from its latest version, as the bump reads it).

    >>> "FOR KEY SHARE" in lock_statement(request=True), "lf AS" in lock_statement()
    (True, False)
    """
    ctes = []
    if owned is not None:
        ctes += [_OWNED.format(live=owned),
                 f"l AS (SELECT CASE WHEN (SELECT mine FROM o) THEN {_TRY} ELSE false END"
                 " AS got)"]
    else:
        ctes.append(f"l AS (SELECT {_TRY} AS got)")
    ctes.append(_CREATE if create else _BUMP)
    if request:
        ctes.append(_REQUEST)
    if log_first:
        ctes.append(_LOG_FIRST.format(done=_NOT_DONE if request else ""))
    mine = "coalesce((SELECT mine FROM o), false)" if owned is not None else "true"
    done = "coalesce((SELECT done FROM r), false)" if request else "false"
    return ("WITH " + ", ".join(ctes) +
            f" SELECT (SELECT got FROM l), (SELECT lease_epoch FROM b), {mine}, {done},"
            " coalesce((SELECT headless FROM b), false)")
