"""The offline responder: useful with no language model configured, and honest.

Deterministic: the same request always gives the same reply. The whole reply
is composed before anything is sent, so it is ready at one moment and streams
as ONE ``TextChunk`` (one ``text_delta``): a delta carries one or more whole
words, clients concatenate them (``TextDelta`` in the proto). Per turn it
composes, in this order:

1. the Majlis opening (reciprocal greeting) the respond node computed;
2. the business part —
   * after a tool round: what the tool returned, or that it failed;
   * a tool whose example utterances match and whose required parameters the
     tool's patterns extract → a tool call (the loop runs it and calls back);
   * a question or request → the recalled sentences that answer it, cited;
     a partial match → one clarifying question; nothing at all → "I don't
     know" (it never invents facts);
   * frustration → an offer of a human; insistence → ``handoff_to_human``;
   * support (majlis.models.support): «شنو اسمي؟» → «اسمك أحمد»; the bot's name
     only from the persona; an order/return/complaint without its number asks
     for it, one given earlier in the thread is reused (also as a tool argument);
   * nothing else to say → "how can I help" (a greeting is never the whole reply);
3. the Majlis closing (reply to thanks / farewell).

Example, region ``gulf``, KB chunk «الدوام من الأحد إلى الخميس، من 8 صباحًا إلى 4 عصرًا.»:
«متى الدوام عندكم؟» → «الدوام من الأحد إلى الخميس، من 8 صباحًا إلى 4 عصرًا.» + a citation.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from majlis.models import support
from majlis.models.answers import (
    LEAD_CAP,
    MSA_CHUNKS,
    Answer,
    Expander,
    display_topic,
    document_lead,
    select_answer,
)
from majlis.models.phrases import PhraseBook
from majlis.models.types import (
    ChatMessage,
    Citation,
    ModelOutput,
    ModelRequest,
    Recalled,
    ResponderContext,
    TextChunk,
    ToolCallRequest,
    ToolSpec,
    UsageReport,
)
from majlis.reply_text import render_content
from nlp.keys import KeyFunction, content_keys, search_keys, stop_keys_for

__all__ = ["OfflineResponder"]

HANDOFF_TOOL = "handoff_to_human"
# Share of the user's own content keys that a tool example must account for.
_MIN_QUERY_SHARE = 0.34
# Arabic-Indic digits U+0660..U+0669 and Extended (Persian) U+06F0..U+06F9 → ASCII,
# applied only to extracted tool arguments (backends want ASCII ids), never to display text.
_DIGITS = str.maketrans("٠١٢٣٤٥٦٧٨٩۰۱۲۳۴۵۶۷۸۹", "01234567890123456789")


class OfflineResponder:
    """A :class:`~majlis.models.types.ChatModel` that needs no model."""

    name = "offline"

    def __init__(
        self,
        *,
        keys: KeyFunction = search_keys,
        phrases: PhraseBook | None = None,
        answer_threshold: float = 0.15,
        grounding_threshold: float = 0.82,
        dialect_grounding_threshold: float = 0.6,
        dialect_plain_grounding_threshold: float = 0.7,
        dialect_typed_grounding_threshold: float = 0.5,
        dialect_answer_threshold: float = 0.1,
        clarify_threshold: float = 0.25,
        tool_threshold: float = 0.5,
        lead_threshold: float = 3.0,
        lead_plain_missing: int = 1,
        dialect_two_missing_grounding_threshold: float = 0.8,
        lead_grounding_threshold: float = 0.3,
        lead_answer_threshold: float = 0.05,
        compete_threshold: float = 2.0,
        msa_titled_grounding_threshold: float = 0.7,
        expand: Expander | None = None,
        dialect_cue: Callable[[str], bool] | None = None,
    ) -> None:
        self._keys = keys
        self._expand = expand  # dialect → MSA bridge for matching (majlis.models.answers)
        self._dialect_cue = dialect_cue  # is a question dialect? (looser grounding)
        self._stop = stop_keys_for(keys)
        self._phrases = phrases or PhraseBook.load()
        self._answer_threshold = answer_threshold
        self._grounding_threshold = grounding_threshold
        self._dialect_grounding = dialect_grounding_threshold
        self._dialect_plain_grounding = dialect_plain_grounding_threshold
        self._dialect_typed_grounding = dialect_typed_grounding_threshold
        self._dialect_answer = dialect_answer_threshold
        self._clarify_threshold = clarify_threshold
        self._tool_threshold = tool_threshold
        self._lead = lead_threshold
        self._lead_plain = lead_plain_missing
        self._dialect_two_missing = dialect_two_missing_grounding_threshold
        self._lead_grounding = lead_grounding_threshold
        self._lead_answer = lead_answer_threshold
        self._compete = compete_threshold
        self._msa_titled = msa_titled_grounding_threshold

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelOutput]:
        text, extras = self.compose(request)
        if text:
            # Every word is ready now: one delta, not one per word (each event
            # costs the service a trip through the graph's stream and gRPC).
            yield TextChunk(text)
        for extra in extras:
            yield extra
        yield UsageReport(model=self.name, prompt_tokens=0, completion_tokens=0)

    # -- composition -------------------------------------------------------------------

    def compose(self, request: ModelRequest) -> tuple[str, list[Citation | ToolCallRequest]]:
        """The whole reply text plus the citations / tool calls that go with it."""
        ctx = request.context
        say = self._say(ctx.region)
        tool_turn = _trailing_tool_messages(request.messages)
        if tool_turn:  # second round: only report what the tools did
            return " ".join(self._describe_tool_results(tool_turn, ctx.region)), []
        parts: list[str] = [ctx.opening] if ctx.opening else []
        extras: list[Citation | ToolCallRequest] = []
        tools = {t.name: t for t in request.tools}
        if ctx.insists and HANDOFF_TOOL in tools:
            parts.append(say("handoff_started"))
            extras.append(_call(request, HANDOFF_TOOL, {"reason": _handoff_reason(ctx)}))
            return _join(parts), extras
        direct = support.direct_reply(ctx, say)
        if direct is not None:  # «شنو اسمي؟» → «اسمك أحمد», never «اسمي أحمد»
            return _join([*parts, direct, say("how_can_i_help"), ctx.closing]), extras
        # A bare «48213» after we asked: the business is the request it completes.
        asked = ctx.pending_request or support.business_text(ctx.user_text)
        call, missing = self._match_tool(asked, request.tools, known=ctx.known)
        if call is not None:
            extras.append(_call(request, call[0], call[1]))
            return _join(parts), extras
        business = False
        if missing is not None:
            parts.append(say("need_param", what=missing))
            business = True
        offered_handoff = False
        if missing is None and (ctx.is_request or ctx.order_intent):
            # The knowledge base answers from documents only: a user's own fact
            # quoted back would speak in their first person.
            docs = tuple(r for r in ctx.recalled if r.kind == "document")
            answer = self._answer(replace(ctx, user_text=asked, recalled=docs), extras)
            if ctx.complaint and not extras and not ctx.order_intent:
                # A problem we hold no article for: say sorry, ask what exactly
                # happens, and offer a person — never "I don't know" to a complaint.
                answer, offered_handoff = say("complaint_details"), True
            answer = support.follow_up(ctx, answer, answered=bool(extras), say=say)
            offered_handoff = offered_handoff or (ctx.order_intent and not extras
                                                  and ("order_number" in ctx.known
                                                       or ctx.complaint))
            parts.append(answer)
            business = True
        if (ctx.frustrated or ctx.insists) and not offered_handoff:
            parts.append(say("handoff_offer"))
            business = True
        # A greeting (seasonal or not) opens a reply but is never all of it.
        if not business and not ctx.closing:
            parts.append(say("how_can_i_help"))
        if ctx.closing:
            parts.append(ctx.closing)
        return _join(parts), extras

    def _say(self, region: str) -> Any:
        def say(phrase_id: str, **slots: str) -> str:
            return self._phrases.say(phrase_id, region, **slots)

        return say

    def _answer(self, ctx: ResponderContext, extras: list[Citation | ToolCallRequest]) -> str:
        say = self._say(ctx.region)
        q_keys = content_keys(ctx.user_text, self._keys, self._stop)
        found = self.choose(ctx.user_text, ctx.recalled)
        if found is not None and self._grounded(found):
            extras.append(Citation(found.source, snippet=found.text))
            # A dialect lead-in («أبشر، هذي المعلومة:») frames the fact; MSA has
            # none (its entry is empty): the fact alone is the formal register.
            return _join([say("answer_lead"), found.text])
        if len(set(q_keys)) < 2:
            return say("clarify_vague")  # "عندي سؤال" names nothing to look up
        topic = display_topic(found.source.title) if found is not None else ""
        # «المقصود <topic>؟» only when documents compete: when retrieval clearly put
        # one first, the customer did name its topic, and asking it back is no help.
        if (found is not None and found.coverage >= self._clarify_threshold and topic
                and found.lead < self._compete):
            return say("clarify_topic", topic=topic)
        return say("dont_know")

    def choose(self, question: str, recalled: Sequence[Recalled]) -> Answer | None:
        """The answer :meth:`_answer` serves when it is grounded (else the best
        ungrounded one, whose topic a clarifying question may name).

        A dialect question is answered across every chunk recalled, by one score
        (select_answer: coverage, type, the chunk's share, its title and its
        retrieval score): «كم يوم عندي عشان ارجع الجوال؟» finds «يمكن إرجاع المنتج
        خلال 14 يوما…» in the fourth chunk rather than a procedure of the second,
        even when the first three give a grounded answer.  From a chunk among the
        first three, the first three's own answer stands (as it does when the
        wider one is not grounded), and an MSA question reads only those (its bars
        were calibrated on ARCD over three).  Last, the first chunk alone when its title is named:
        the best sentence can come from a chunk that shares a chance word with the
        question («ممّن كان قد أسلم» for «ممن استعمرت الهند؟») and is about
        something else.
        """
        def select(chunks: Sequence[Recalled]) -> Answer | None:
            return select_answer(question, chunks, keys=self._keys, stop=self._stop,
                                 expand=self._expand, dialect_cue=self._dialect_cue)

        # select_answer reads only the first MSA_CHUNKS of an MSA question: then
        # ``found`` already is the top-ranked chunks' answer.
        found = select(recalled)
        if found is not None and found.dialect and len(recalled) > MSA_CHUNKS:
            wide, found = found, select(recalled[:MSA_CHUNKS])
            # The wider answer replaces the top chunks' only from a chunk they lack:
            # over the same chunks, the top three's own weighing (IDF over fewer
            # sentences) keeps the ARCD answers it was calibrated on («ما هو اول
            # نادي لعب فيه رونالدو؟», which the bridge reads as dialect).
            if self._grounded(wide) and (wide.source not in recalled[:MSA_CHUNKS]
                                         or not self._grounded(found)):
                found = wide
        if not self._grounded(found) and recalled:
            first = select(recalled[:1])
            if first is not None and first.title_share > 0:
                first = replace(first, lead=document_lead(recalled[:MSA_CHUNKS], 0))
                if self._grounded(first):
                    found = first
        return found

    def _grounded(self, found: Answer | None) -> bool:
        """Do the chosen sentences answer, from a chunk about what was asked?

        Two conditions: the chosen sentences must cover the question (weighted),
        and the chunk must contain most of its words (Answer.grounding) — what
        stops an answer about a *different* entity when the KB lacks the one
        asked about (calibrated on ARCD, MSA: bench/offline_qa.py).  A dialect
        question (Answer.dialect) always carries words an MSA policy never has
        (بيفضل، مالتكم، صارت), so it needs less of them (bench/support.py dev sets,
        curve: bench/answer_curve.py).  An unmatched *plain MSA* word («الدولار»,
        «المستعملة») may be a subject the chunk does not hold: a higher bar.  A
        sentence carrying what the question asks (the number for «قديش», the day for
        «امتى») with no plain word missing: a lower one («وين اشوف نقاطي؟»).

        A document retrieval clearly put first (Answer.lead ≥ ``lead_threshold``)
        whose sentence carries strong evidence of what was asked (the number, the
        day, the page: Answer.strength 1) answers even when the question paraphrases
        it («تحتسب فائدة» for «لا تفرض أي فوائد») — when no plain MSA word is unmatched,
        or one (``lead_plain_missing``) when another document was recalled to lead:
        «سعر الذهب» names a subject even a clear document lacks.  Two unmatched plain
        words in a dialect question name another subject more surely than one: the bar
        rises to ``dialect_two_missing_grounding_threshold``.  Measured together on the
        six support sets (session 7: lead 5 → 3, one plain word allowed against a
        competitor, 0.8 for two): answers 328 → 330 of 498, unanswerables abstained
        80 → 81 of 90, ARCD over gRPC unchanged.  Curve: bench/answer_curve.py;
        support sets and ARCD in bench/results.

        A dialect question asking whether something is had or offered
        (Answer.existence: «عندكم…؟», «فيه…؟», «واش كاين…؟») needs every plain word it
        names in the chosen sentences, not only in their chunk (Answer.
        sentence_plain_missing): measured in session 10 on the eleven support sets,
        unanswerables abstained 159 → 164 of 177 for 3 answers of 918 (two «اكو…؟»
        questions the sentence answers with a synonym); ARCD right sentence 890 → 889
        of 1,395 (an MSA question the bridge reads as dialect), abstention unchanged.

        An MSA question of one word that is not the chunk's title («متى ولد؟», «من
        امه؟») names no subject: any chunk holding the word would seem to answer
        (ARCD in-process: 16 of 693 held-out questions quoted, against 6 of 1,395
        right spans; the support sets' MSA rows unchanged).

        An MSA question has no bridge: a paraphrase («يغلق … ليلا» for «يعمل … حتى
        الساعة 9 مساء») leaves words no chunk holds.  When it names the document's
        title, that document leads the recall by ``compete_threshold`` and its sentence
        carries strong type evidence, the bar is ``msa_titled_grounding_threshold``
        (0.7, the dialect bar with a plain word missing) instead of 0.82.  Measured
        in session 13 over gRPC on the sixteen support sets: answers 797 → 808 of
        1,366, abstention unchanged on every set; ARCD span 0.6401 → 0.6416,
        abstention 0.8586 unchanged.  0.6 (or 0.6 for all but yes/no) lets an ARCD
        held-out question through; leave-one-set-out over {0.6, 0.7, 0.82}² (general,
        yes/no) picks 0.7/0.7 for every held-out set: the same 11.

        A second look (Answer.without_framing): when all the chunk lacks are words
        that frame the question — a dialect question's function words («ينفع»,
        «عادي», «بيه», «تبعي»: majlis/models/data/function_words.tsv, written for the
        five regions from their grammar), or frame verbs and measure nouns («يستغرق»,
        «يقع», «المطلوبة») beside a sentence carrying the type asked — the bars are
        applied without them.  Measured in session 12 replaying the three stages on
        the fourteen support sets: answers 696 → 700 of 1,194, unanswerables
        abstained 215 of 234 on every set as before; leave-one-set-out (a word left
        out for a set when it let an unanswerable through on the other sets) the
        same (bench/framing_loso.py); ARCD in-process right span 0.6358 → 0.6401,
        abstention 0.8586 unchanged.
        """
        if found is None:
            return False
        if self._passes(found):
            return True
        # A second look for a dialect question whose chunk lacks only dialect
        # function words (Answer.without_framing): the bars without them.
        return found.without_framing is not None and self._passes(found.without_framing)

    def _passes(self, found: Answer) -> bool:
        """The bars of :meth:`_grounded`, on one measure of the answer."""
        if found.dialect and found.existence and found.sentence_plain_missing:
            # «عندكم خصم للطلبة؟», «بتعملوا صيانة للبرادات؟»: whether a thing is offered
            # is answered by a sentence that names it; a chunk naming it elsewhere, or
            # a sentence about a neighbouring service, is no yes and no no.
            return False
        if found.concepts == 1 and not found.title_share and not found.dialect:
            # «متى ولد؟», «من امه؟»: one word asked, and not the chunk's subject — the
            # question names no subject; any chunk holding «ولد» would seem to answer.
            return False
        # One unmatched plain word is forgiven only against a competing document: a
        # document alone in the recall (lead at its cap) leads by default.
        forgiven = self._lead_plain if found.lead < LEAD_CAP else 0
        if (found.lead >= self._lead and found.strength >= 1.0
                and found.plain_missing <= forgiven
                and found.coverage >= self._lead_answer
                and found.grounding >= self._lead_grounding):
            return True
        if (not found.dialect and found.strength >= 1.0 and found.title_share > 0
                and found.lead >= self._compete and found.coverage >= self._answer_threshold
                and found.grounding >= self._msa_titled):
            # «متى يغلق ركن المأكولات ليلا؟» over «تعمل المأكولات … حتى منتصف الليل»:
            # an MSA paraphrase (يغلق/تعمل حتى) misses words the dialect bridge cannot
            # supply; the document it names (title) and leads by the competing margin,
            # with the type asked (a time, a number), is held to the bar of a dialect
            # question missing a plain word rather than ARCD's 0.82.
            return True
        dialect = found.dialect
        grounding = self._dialect_grounding if dialect else self._grounding_threshold
        if dialect and found.plain_missing:
            grounding = self._dialect_plain_grounding
        if dialect and found.plain_missing >= 2:
            grounding = max(grounding, self._dialect_two_missing)
        if dialect and not found.plain_missing and found.typed:
            grounding = min(grounding, self._dialect_typed_grounding)
        coverage = self._dialect_answer if dialect else self._answer_threshold
        return found.coverage >= coverage and found.grounding >= grounding

    def _match_tool(
        self, text: str, tools: Sequence[ToolSpec], *, known: Mapping[str, str] | None = None
    ) -> tuple[tuple[str, dict[str, Any]] | None, str | None]:
        """(tool name, extracted arguments) for the best matching tool, else the
        description of a missing required parameter of a matching tool."""
        q_keys = _words_only(content_keys(text, self._keys, self._stop))
        best: tuple[float, int, ToolSpec] | None = None
        for index, spec in enumerate(tools):
            for example in spec.examples:
                e_keys = _words_only(content_keys(example, self._keys, self._stop))
                if not e_keys or not q_keys:
                    continue
                # Most of the example must be said, and it must be most of what was said:
                # «وين طلبي» matches «وين طلبي رقم 4411» but not a paragraph mentioning طلب.
                shared = len(e_keys & q_keys)
                score = shared / len(e_keys)
                if shared / len(q_keys) < _MIN_QUERY_SHARE or score < self._tool_threshold:
                    continue
                if best is None or score > best[0]:
                    best = (score, -index, spec)
        if best is None:
            return None, None
        spec = best[2]
        # What the thread already knows fills in what this message leaves out.
        arguments = {**support.known_arguments(spec, known or {}),
                     **_extract_arguments(text, spec)}
        required = [str(r) for r in spec.parameters.get("required", ())]
        missing = [r for r in required if r not in arguments]
        if missing:
            props = spec.parameters.get("properties", {})
            return None, str(props.get(missing[0], {}).get("description") or missing[0])
        return (spec.name, arguments), None

    def _describe_tool_results(self, results: Sequence[ChatMessage], region: str) -> list[str]:
        say = self._say(region)
        lines: list[str] = []
        for message in results:
            try:
                payload = json.loads(message.content)
            except ValueError:
                payload = {"ok": False}
            if not isinstance(payload, dict):
                payload = {"ok": True, "content": payload}
            if payload.get("status") == "awaiting_approval":
                lines.append(say("awaiting_approval"))
            elif not payload.get("ok"):
                lines.append(say("tool_failed"))
            elif message.name == HANDOFF_TOOL:
                lines.append(say("handoff_done"))
            else:
                lines.append(f"{say('tool_result')} {render_content(payload.get('content'))}")
        return lines


def _words_only(keys: Sequence[str]) -> set[str]:
    """Keys without numbers: an order number is a parameter, not what the user asked."""
    return {k for k in keys if not k.translate(_DIGITS).isdigit()}


# A part that ends without punctuation gets a full stop before the next part,
# so "وعليكم السلام" + "…" reads as two sentences, not one run-on line.
_ENDS_SENTENCE = frozenset(".!?؟،,:؛")


def _join(parts: Sequence[str]) -> str:
    kept = [p.strip() for p in parts if p and p.strip()]
    return " ".join(
        p if i == len(kept) - 1 or p[-1] in _ENDS_SENTENCE else p + "."
        for i, p in enumerate(kept)
    )


def _trailing_tool_messages(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    tail: list[ChatMessage] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        tail.append(message)
    return list(reversed(tail))


def _call(request: ModelRequest, name: str, arguments: Mapping[str, Any]) -> ToolCallRequest:
    # Unique within the turn: one per earlier assistant tool round.
    rounds = sum(1 for m in request.messages if m.role == "assistant" and m.tool_calls)
    return ToolCallRequest(id=f"offline-{rounds + 1}-{name}", name=name, arguments=dict(arguments))


def _handoff_reason(ctx: ResponderContext) -> str:
    return "المستخدم يصرّ على طلبه" if ctx.insists else "المستخدم منزعج"


def _extract_arguments(text: str, spec: ToolSpec) -> dict[str, Any]:
    props: Mapping[str, Any] = spec.parameters.get("properties", {})
    arguments: dict[str, Any] = {}
    for name, pattern in spec.parameter_patterns.items():
        match = re.search(pattern, text)
        if match is None:
            continue
        raw = (match.group(1) if match.groups() else match.group(0)).strip()
        value: Any = raw.translate(_DIGITS)
        kind = props.get(name, {}).get("type")
        if kind in ("integer", "number"):
            try:
                value = int(value) if kind == "integer" else float(value)
            except ValueError:
                continue
        arguments[name] = value
    return arguments
