"""The extractive summary and the fold boundary, as pure functions (no model, no database)."""

from __future__ import annotations

from datetime import UTC, datetime

from majlis.compaction import CompactionPolicy, estimate_tokens, split_turns
from majlis.records import ThreadMessage
from majlis.summaries import BOT_MARK, USER_MARK, extractive_summary, fit

AT = datetime(2026, 11, 1, 7, 30, tzinfo=UTC)


def _turn(turn_id: str, user: str, reply: str) -> list[ThreadMessage]:
    return [ThreadMessage("user", user, turn_id, "transaction", "gulf", AT),
            ThreadMessage("assistant", reply, turn_id, "transaction", "gulf", AT)]


def test_customer_text_is_kept_as_typed_and_numbers_are_masked() -> None:
    # Hamza, shadda, tatweel, Arabic-Indic digits: nothing is normalised but the number.
    typed = "أبيّ أرجّـع المنتج، طلبي رقم ٤٨٢١٣"
    summary = extractive_summary("", _turn("t1", typed, "تمام. نرتّب لك الإرجاع اليوم."),
                                 max_chars=500)
    assert summary.splitlines() == [USER_MARK + "أبيّ أرجّـع المنتج، طلبي رقم ****13",
                                    BOT_MARK + "تمام."]


def test_social_turns_and_repeats_leave_no_line() -> None:
    folded = [*_turn("t1", "السلام عليكم", "وعليكم السلام"),
              *_turn("t2", "وين طلبي؟", "عطني رقم الطلب لو سمحت."),
              *_turn("t3", "شكرا", "العفو"),
              *_turn("t4", "وين طلبي؟", "عطني رقم الطلب لو سمحت.")]
    summary = extractive_summary(USER_MARK + "اسمي أحمد", folded, max_chars=500)
    assert summary.splitlines() == [USER_MARK + "اسمي أحمد", USER_MARK + "وين طلبي؟",
                                    BOT_MARK + "عطني رقم الطلب لو سمحت."]


def test_over_the_cap_replies_go_first_then_lines_without_a_number() -> None:
    lines = [USER_MARK + "طلبي رقم ****13", BOT_MARK + "أبشر", USER_MARK + "ابي ارجع المنتج",
             BOT_MARK + "تمام", USER_MARK + "العنوان حولي"]
    cap = sum(len(x) + 1 for x in lines[0::2])
    assert fit(lines, cap) == lines[0::2]
    assert fit(lines, len(lines[0]) + 1) == [lines[0]]


def test_only_whole_turns_fold_and_the_latest_stay() -> None:
    messages = [m.to_state() for t in ("a", "b", "c") for m in _turn(t, "س", "ج")]
    messages.append(ThreadMessage("assistant", "وافقنا", "d", "transaction", "gulf",
                                  AT).to_state())  # an approval turn: the reply alone
    fold, keep = split_turns(messages, 2)
    assert [m["turn_id"] for m in fold] == ["a", "a", "b", "b"]
    assert [m["turn_id"] for m in keep] == ["c", "c", "d"]
    assert split_turns(messages, 9) == ([], messages)
    assert estimate_tokens(keep) == 2 * (1 // 3 + 4) + (len("وافقنا") // 3 + 4)


def test_policy_from_settings_by_name() -> None:
    class S:
        compaction_tokens = 800
        compaction_keep_turns = 3

    assert CompactionPolicy.from_settings(S(), by_model=True) == CompactionPolicy(800, 3, True)
    assert not CompactionPolicy.from_settings(object()).tokens
