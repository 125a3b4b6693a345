"""The PostgreSQL store's ranked search: one statement (see SEARCH) and the typo lookup."""

from __future__ import annotations

from memory.pg_schema import COLUMNS
from memory.ranking import SHORT_TERMS

# One round trip per search: statistics, candidate choice and BM25 in a
# single statement.  On a busy 2-core machine every extra round trip is one
# more wake-up of the backend, and those wake-ups, not the plan, made p99.
#
# q: the query's lexemes that the tenant's rows contain, rarest first, with the
#    running sum of their document frequencies.
# pick: the candidate tsquery.  The rarest lexemes OR-ed while their summed
#    document frequencies stay within the budget ($7); commoner terms still
#    score the candidates but do not widen the set.  A record holding none of
#    the rare terms scores at most the commoner terms' IDF sum, so this is
#    max-score pruning, simplified.  When even the rarest is over budget (a
#    query of common words only) it is AND-ed with the rarest lexeme that is
#    not a form of the same word (a stem inside its surface form, as يرحم in
#    يرحمك, would narrow nothing); ``alone`` is then the rarest by itself,
#    searched only when the AND leaves fewer than k candidates; both keep
#    only SCAN_CANDIDATES rows ($9, ``take``).  scan: see SCAN_CANDIDATES.
# Lexemes are quoted for the tsquery cast exactly as the tsquery input
# function expects ('' and \ escaped), so no lexeme can be an operator.
# Either way the rows scored per query are bounded by the budget, which keeps
# p99 flat as the table grows (bench/memory_scale.py).
#
# Term frequencies come from the candidate's own tsvector: setweight() marks
# the query lexemes and ts_filter() keeps only those, both in C, so only the
# handful of matching lexemes are unnested instead of the whole vector.
# Every numeric parameter is cast explicitly: left to inference, a float next
# to the integer ``doc_len`` became an integer and BM25 lost its length
# normalisation.
# Visibility: tenant-wide rows (user_id NULL) plus the asking user's own; a
# search without a user sees tenant-wide rows only ('' is never a user id:
# NewRecord.validated rejects it).  Written with coalesce rather than
# "user_id IS NULL OR user_id = $3" on purpose: that form matches the
# (tenant, user_id) btree, and before ANALYZE has run on a freshly loaded
# table the planner preferred it and checked tsv row by row (20k rows:
# 135 ms) instead of using the GIN index.
_CTES = r"""
WITH u AS MATERIALIZED (
    -- Own lexemes weigh 1, bridge-only lexemes ($12, memory.expansion) weigh $13.
    SELECT x.lexeme, max(x.wt) AS wt FROM (
        SELECT o.lexeme, 1.0::float8 AS wt
        FROM unnest(to_tsvector('simple'::regconfig, $2::text)) AS o
        UNION ALL
        SELECT b.lexeme, $13::float8
        FROM unnest(to_tsvector('simple'::regconfig, $12::text)) AS b
        UNION ALL
        -- Typo corrections (memory.typo), weighted $15; empty on the first stage.
        SELECT c.lexeme, $15::float8
        FROM unnest(to_tsvector('simple'::regconfig, $14::text)) AS c
    ) AS x GROUP BY x.lexeme
),
q AS MATERIALIZED (
    SELECT u.lexeme, u.wt, t.df,
           sum(t.df) OVER (ORDER BY t.df, u.lexeme) AS spent,
           row_number() OVER (ORDER BY t.df, u.lexeme) AS rank,
           '''' || replace(replace(u.lexeme, '\', '\\'), '''', '''''') || '''' AS quoted
    FROM u
    JOIN memory_terms AS t ON t.tenant = $1 AND t.lexeme = u.lexeme
),
st AS MATERIALIZED (
    -- Length pools (memory.ranking): short items and passages each have
    -- their own average length; N and IDF stay the tenant's.
    SELECT s.n_docs::float8 AS n,
           greatest(s.short_len::float8 / greatest(s.short_docs, 1), 1.0) AS avg_short,
           greatest((s.total_len - s.short_len)::float8 / greatest(s.n_docs - s.short_docs, 1),
                    1.0) AS avg_long
    FROM memory_stats AS s WHERE s.tenant = $1
),
w AS MATERIALIZED (
    SELECT q.lexeme, q.wt * ln(1 + (st.n - q.df + 0.5) / (q.df + 0.5)) AS idf FROM q, st
),
pick AS MATERIALIZED (
    SELECT CASE WHEN r1.df <= $7::bigint
                THEN (SELECT string_agg(q.quoted, ' | ' ORDER BY q.rank) FROM q
                      WHERE q.spent <= $7::bigint)
                ELSE r1.quoted || coalesce(' & ' || partner.quoted, '')
           END::tsquery AS main,
           CASE WHEN r1.df > $7::bigint THEN r1.quoted::tsquery END AS alone,
           CASE WHEN r1.df > $7::bigint THEN $9::bigint ELSE $7::bigint END AS take,
           r1.df::float8 * r1.df > $10::float8 * $9::int * st.n AS scan,
           least(ceil($10::float8 * $9::int * st.n / r1.df), $11::float8)::bigint AS scan_rows
    FROM q AS r1
    CROSS JOIN st
    LEFT JOIN LATERAL (
        SELECT q.quoted FROM q
        WHERE q.rank > 1 AND strpos(r1.lexeme, q.lexeme) = 0 AND strpos(q.lexeme, r1.lexeme) = 0
        ORDER BY q.rank LIMIT 1
    ) AS partner ON true
    WHERE r1.rank = 1
),
cand AS MATERIALIZED (
  (SELECT r.id, r.doc_len, r.tsv FROM memory_records AS r
    WHERE NOT (SELECT scan FROM pick)
      AND r.tsv @@ (SELECT main FROM pick)
      AND r.tenant = $1
      AND coalesce(r.user_id, '') IN ('', coalesce($3::text, ''))
      AND r.kind = ANY($4::text[])
    LIMIT (SELECT take FROM pick))
  UNION ALL
    -- ts_match_vq is @@ spelled as a function, which no index matches: the
    -- scan reads the tenant's rows in heap order, at most scan_rows of them.
  (SELECT r.id, r.doc_len, r.tsv
    FROM (SELECT r.id, r.doc_len, r.tsv, r.user_id, r.kind FROM memory_records AS r
          WHERE (SELECT scan FROM pick) AND r.tenant = $1
          LIMIT (SELECT scan_rows FROM pick)) AS r
    WHERE ts_match_vq(r.tsv, (SELECT alone FROM pick))
      AND coalesce(r.user_id, '') IN ('', coalesce($3::text, ''))
      AND r.kind = ANY($4::text[])
    LIMIT $9)
),
extra AS (
    SELECT r.id, r.doc_len, r.tsv FROM memory_records AS r
    WHERE (SELECT count(*) FROM cand) < $8::int
      AND r.tsv @@ (SELECT alone FROM pick)
      AND r.id NOT IN (SELECT cand.id FROM cand)
      AND r.tenant = $1
      AND coalesce(r.user_id, '') IN ('', coalesce($3::text, ''))
      AND r.kind = ANY($4::text[])
    LIMIT $9
),
top AS (
    -- One join of every candidate's matching lexemes against w, grouped per
    -- candidate: a LATERAL sum per candidate built a hash table per row.
    SELECT c.id,
           sum(w.idf * (x.tf * ($5::float8 + 1))
               / (x.tf + $5::float8 * (1 - $6::float8
                                       + $6::float8 * c.doc_len
                                         / CASE WHEN c.doc_len < SHORT
                                                THEN (SELECT avg_short FROM st)
                                                ELSE (SELECT avg_long FROM st) END)))
           AS score
    FROM (SELECT * FROM cand UNION ALL SELECT * FROM extra) AS c
    CROSS JOIN LATERAL (
        SELECT u.lexeme, coalesce(cardinality(u.positions), 1)::float8 AS tf
        FROM unnest(ts_filter(setweight(c.tsv, 'A', (SELECT array_agg(w.lexeme) FROM w)),
                              '{a}')) AS u
    ) AS x
    JOIN w ON w.lexeme = x.lexeme
    GROUP BY c.id
    ORDER BY score DESC, c.id
    LIMIT $8
)
""".replace("SHORT", str(int(SHORT_TERMS)))
# A hit never carries the uploaded document (memory.kb keeps it in its first
# chunk's metadata): up to DIWANIYA_KB_MAX_DOCUMENT_BYTES per hit.
_HIT_COLUMNS = COLUMNS.replace("r.metadata::text", "(r.metadata - 'document')::text")

# Only the k winners are read in full (text, metadata): candidates carry just
# what scoring needs.
SEARCH = _CTES + f"""
SELECT {_HIT_COLUMNS}, top.score, (SELECT array_agg(w.lexeme) FROM w) AS lexemes
FROM top JOIN memory_records AS r ON r.tenant = $1 AND r.id = top.id
ORDER BY top.score DESC, top.id
"""

# A turn's recall in one round trip (PostgresMemoryStore.recall): SEARCH's
# hits (part 0, in rank order), the user's facts ($16; none when NULL) of the
# kinds $17, newest first, at most $18 (part 1, as user_records reads them),
# one row with the query lexemes the tenant's vocabulary holds (part 2: with
# no hit SEARCH's rows do not say; the typo stage needs them), the typo
# stage's candidates for the keys $19 (part 3, SIMILAR_TERMS with $20 per key;
# the caller passes none when the stage is off or the query is Arabizi) and
# which of the Arabizi readings $21 the tenant holds (part 4, _HELD_TERMS).
# Everything is read in the statement's one snapshot, nothing is cached in the
# process, so any replica answers the same.  Only a typo or Arabizi
# correction then costs a second statement (SEARCH again, with $14).
RECALL = _CTES + f""",
hit AS (
    SELECT {_HIT_COLUMNS.replace("::text", "::text AS metadata")}, top.score,
           row_number() OVER (ORDER BY top.score DESC, top.id) AS ord
    FROM top JOIN memory_records AS r ON r.tenant = $1 AND r.id = top.id
),
fact AS (
    SELECT {COLUMNS}, row_number() OVER (ORDER BY r.updated_at DESC, r.id) AS ord
    FROM memory_records AS r
    WHERE $16::text IS NOT NULL AND r.tenant = $1 AND r.user_id = $16::text
      AND r.kind = ANY($17::text[])
    ORDER BY r.updated_at DESC, r.id LIMIT $18::int
)
SELECT 0 AS part, hit.ord, hit.id, hit.tenant, hit.user_id, hit.kind, hit.text, hit.title,
       hit.metadata, hit.thread_id, hit.turn_id, hit.doc_id, hit.created_at, hit.updated_at,
       hit.score::float8 AS score, NULL::text[] AS lexemes,
       NULL::text AS term, NULL::text AS lexeme, NULL::bigint AS df
FROM hit
UNION ALL
SELECT 1, fact.ord, fact.id, fact.tenant, fact.user_id, fact.kind, fact.text, fact.title,
       fact.metadata, fact.thread_id, fact.turn_id, fact.doc_id, fact.created_at,
       fact.updated_at, NULL, NULL, NULL, NULL, NULL
FROM fact
UNION ALL
SELECT 2, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       (SELECT array_agg(q.lexeme) FROM q), NULL, NULL, NULL
UNION ALL
SELECT 3, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, s.term, s.lexeme, s.df
FROM unnest($19::text[]) AS s0(term)
CROSS JOIN LATERAL (
    SELECT s0.term, m.lexeme, m.df FROM memory_terms AS m
    WHERE m.lexeme % s0.term AND m.tenant = $1
    ORDER BY similarity(m.lexeme, s0.term) DESC, m.df DESC, m.lexeme
    LIMIT $20::int
) AS s
WHERE NOT EXISTS (SELECT 1 FROM memory_terms AS k WHERE k.tenant = $1 AND k.lexeme = s0.term)
UNION ALL
SELECT 4, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, m.lexeme, NULL
FROM memory_terms AS m
WHERE m.tenant = $1 AND m.lexeme = ANY($21::text[]) AND m.df > 0
ORDER BY 1, 2
"""

# Typo stage: for each query key ($2) that the tenant's vocabulary lacks, the
# vocabulary keys pg_trgm's % finds similar (similarity >= its threshold,
# 0.3 by default, the value memory.typo.THRESHOLD assumes), best first, at
# most $3 per key.  The GIN trigram index on memory_terms.lexeme finds them;
# the tenant is checked on the few rows it returns.  memory.typo makes the
# final choice, the same way for both stores.
SIMILAR_TERMS = """
SELECT q.term, c.lexeme, c.df
FROM unnest($2::text[]) AS q(term)
CROSS JOIN LATERAL (
    SELECT m.lexeme, m.df FROM memory_terms AS m
    WHERE m.lexeme % q.term AND m.tenant = $1
    ORDER BY similarity(m.lexeme, q.term) DESC, m.df DESC, m.lexeme
    LIMIT $3
) AS c
WHERE NOT EXISTS (SELECT 1 FROM memory_terms AS k WHERE k.tenant = $1 AND k.lexeme = q.term)
"""
