"""The tone directive: how the service should speak on this turn.

Computed every turn from the tenant's :class:`ToneProfile`, the user's dialect
region, what the message says (:class:`Cues`) and when it is said
(:class:`Moment`), then handed to the model layer as a prompt block.

    >>> from datetime import UTC, datetime
    >>> from zoneinfo import ZoneInfo
    >>> from majlis.culture import SeasonCalendar, read_cues
    >>> at = datetime(2026, 11, 30, 6, tzinfo=UTC)
    >>> moment = SeasonCalendar().moment(at, tz=ZoneInfo("Asia/Kuwait"), country="KW")
    >>> tone = compute_tone(ToneProfile(), region="gulf", cues=read_cues("السلام عليكم"),
    ...                     turn_index=0, known_gender=None, moment=moment, prior_formality=None)
    >>> tone.register, tone.formality, tone.honorific
    ('gulf', 'formal', 'طال عمرك')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from majlis.culture.calendar import Moment, TimeOfDay
from majlis.culture.cues import Cues, Formality

__all__ = [
    "MIRROR_THRESHOLD",
    "REGIONS",
    "ReplyRegister",
    "Stance",
    "ToneDirective",
    "ToneProfile",
    "choose_register",
    "compute_tone",
]

# The dialect regions of nlp (kept here so culture does not depend on nlp's data).
REGIONS = ("msa", "gulf", "egyptian", "levantine", "maghrebi", "iraqi")
# The voice used when the thread's dialect is not known well enough to mirror:
# plain Arabic every region reads as its own, no regional words.
NEUTRAL = "neutral"
Stance = Literal["neutral", "empathetic", "apologetic"]
Gender = Literal["m", "f"]
ReplyRegister = Literal["msa", "dialect", "neutral"]

# Replies mirror the thread's dialect only at this posterior or above. A reply
# in the wrong dialect is worse than one in the neutral voice, so it is set for
# precision: the least value at which mirrored replies were in the right
# dialect ≥ 90 % of the time on the support-style development set — one
# message, with the right or a wrong country, and 3-message threads
# (bench/dialect_thread.py: 0.55 → precision 0.95–0.99; the held-out set
# bench/data/support_dialect_2.tsv gives 0.92–0.97 at the same value).
MIRROR_THRESHOLD = 0.55

_LEVEL: Mapping[str, int] = {"casual": 0, "neutral": 1, "formal": 2}
_BY_LEVEL: tuple[Formality, ...] = ("casual", "neutral", "formal")

# Honorifics that fit each region, by formality and (when known) gender. A
# gender-specific title (أستاذ/أستاذة) is used only when the gender is known;
# otherwise the region's gender-neutral form, or none. Casual register: none.
_HONORIFICS: Mapping[str, Mapping[str, Mapping[str, str]]] = {
    "gulf": {"formal": {"any": "طال عمرك"}, "neutral": {"any": "طال عمرك"}},
    "egyptian": {"formal": {"any": "حضرتك"}, "neutral": {"any": "حضرتك"}},
    "levantine": {"formal": {"any": "حضرتك", "m": "أستاذ", "f": "أستاذة"}},
    "iraqi": {"formal": {"any": "حضرتك", "m": "أستاذ", "f": "ست"}},
    "maghrebi": {"formal": {"m": "سيدي", "f": "لالة"}},
    "msa": {"formal": {"any": "حضرتك", "m": "أستاذ", "f": "أستاذة"}},
}

_REGION_NAMES = {
    "msa": "Modern Standard Arabic (الفصحى)",
    "gulf": "Gulf Arabic (اللهجة الخليجية)",
    "egyptian": "Egyptian Arabic (اللهجة المصرية)",
    "levantine": "Levantine Arabic (اللهجة الشامية)",
    "maghrebi": "Maghrebi Arabic (الدارجة المغاربية)",
    "iraqi": "Iraqi Arabic (اللهجة العراقية)",
    NEUTRAL: "plain, light Arabic that reads naturally in every Arab country "
    "(عربية بسيطة مفهومة في كل البلدان)",
}


def choose_register(
    *, requested: str, policy: str, region: str, confidence: float,
    threshold: float = MIRROR_THRESHOLD, backed: bool = True,
) -> tuple[ReplyRegister, str]:
    """The reply's register and voice (a dialect region, "msa" or "neutral").

    ``requested`` is the caller's per-message choice ("msa", "dialect" or "" for
    the tenant's ``policy``); it wins over the policy. "dialect" mirrors the
    thread's dialect whatever its confidence, or speaks neutral while the thread
    has none; the default mirrors only at ``threshold`` or above and when the
    region is ``backed`` (:attr:`nlp.dialect_thread.ThreadDialect.backed`: no
    other region has more of the thread's marker words and country — the
    identifier's read of words every region says does not overrule them).

    >>> choose_register(requested="", policy="mirror", region="gulf", confidence=0.8)
    ('dialect', 'gulf')
    >>> choose_register(requested="", policy="mirror", region="iraqi", confidence=0.4)
    ('neutral', 'neutral')
    >>> choose_register(requested="msa", policy="mirror", region="egyptian", confidence=0.99)
    ('msa', 'msa')
    >>> choose_register(requested="", policy="mirror", region="gulf", confidence=0.82,
    ...                 backed=False)
    ('neutral', 'neutral')
    """
    dialect = region in REGIONS and region != "msa"
    if requested == "msa" or (not requested and policy == "msa"):
        return "msa", "msa"
    if dialect and (requested == "dialect" or (confidence >= threshold and backed)):
        return "dialect", region
    return "neutral", NEUTRAL


@dataclass(frozen=True)
class ToneProfile:
    """A tenant's voice, from configuration.

    ``register_policy`` "mirror" answers in the thread's dialect once it is sure
    of it (:data:`MIRROR_THRESHOLD`) and in the neutral voice before, "msa"
    always in MSA; a request's own register wins. ``formality_floor`` is the
    least formal the service may get.
    ``national_days`` / ``hijri_offsets`` override the packaged calendar data per
    country (pass them to :class:`SeasonCalendar`).
    """

    persona_name: str = "ديوانية"
    register_policy: Literal["mirror", "msa"] = "mirror"
    formality_floor: Formality = "neutral"
    greeting_style: Literal["warm", "brief"] = "warm"
    # Worship-specific wishes (جمعة مباركة, the last ten nights, «تقبّل الله صيامكم»)
    # are opt-in: many Levantine and Egyptian customers are Christian.
    religious_greetings: bool = False
    national_days: Mapping[str, tuple[tuple[int, int, str], ...]] = field(default_factory=dict)
    hijri_offsets: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class ToneDirective:
    """How to speak on this turn; ``to_prompt()`` renders it for the system prompt."""

    register: str
    formality: Formality
    honorific: str | None
    addressee_gender: Gender | None
    stance: Stance
    brevity: bool
    time_of_day: TimeOfDay
    modifiers: tuple[str, ...]
    persona_name: str = "ديوانية"
    greeting_style: Literal["warm", "brief"] = "warm"
    religious_greetings: bool = False

    def to_prompt(self) -> str:
        """An English + Arabic instruction block, one rule per line."""
        lines = [
            f"You are {self.persona_name} (أنت {self.persona_name}).",
            f"Register: reply in {_REGION_NAMES.get(self.register, self.register)}; "
            "keep the user's own words as they wrote them.",
            f"Formality: {self.formality}"
            + {"formal": " (رسمي، بأدب وتوقير).", "neutral": " (ودّي ومهذب).",
               "casual": "; friendly, but no terms of endearment"
                         " (عفوي وقريب، من غير ألفاظ تحبّب مثل عيوني أو حبيبي).",
               }[self.formality],
            # The persona is the team's voice, not one man («مش عايز، محتاج، آسف»).
            "Speak for the support team in the first person plural, never as one man "
            "(تكلّم باسم الفريق بصيغة الجمع: نحن، نحوّلك، آسفين).",
        ]
        if self.honorific:
            lines.append(
                f"Address the user as «{self.honorific}» where natural "
                f"(خاطب المستخدم بـ«{self.honorific}»)."
            )
        if self.addressee_gender == "f":
            lines.append("The user is a woman: use feminine second person (خاطبها بصيغة المؤنث).")
        elif self.addressee_gender == "m":
            lines.append("The user is a man: use masculine second person (خاطبه بصيغة المذكر).")
        else:
            lines.append(
                "The user's gender is unknown: use gender-neutral phrasing (verbal nouns, "
                "or the polite plural), never a masculine-only imperative; never guess it "
                "from a name (خاطبه بصيغة محايدة، ولا تخمّن الجنس من الاسم)."
            )
        if self.stance == "apologetic":
            lines.append(
                "The user is frustrated: apologise sincerely first, then fix it "
                "(اعتذر أولاً ثم عالج)."
            )
        elif self.stance == "empathetic":
            lines.append("The user has a problem: acknowledge it with empathy (أظهر التفهم).")
        if self.brevity:
            lines.append("Be brief and get to the point (اختصر وادخل في الموضوع).")
        lines.append(f"Time of day for the user: {self.time_of_day}.")
        if self.modifiers:
            lines.append(f"Occasions today: {', '.join(self.modifiers)}.")
        return "\n".join(lines)


def _formality(
    profile: ToneProfile, cues: Cues, *, turn_index: int, prior: str | None
) -> Formality:
    """Formal at first contact; afterwards follow the user, relaxing one step per turn
    (formal → neutral → casual) but rising at once when the user turns formal; never
    below the tenant's floor."""
    floor = _LEVEL[profile.formality_floor]
    if turn_index == 0 or prior not in _LEVEL:
        level = _LEVEL["formal"]
    else:
        wanted, before = _LEVEL[cues.formality], _LEVEL[prior]  # type: ignore[index]
        level = wanted if wanted >= before else before - 1
    return _BY_LEVEL[max(level, floor)]


def _honorific(region: str, formality: Formality, gender: Gender | None) -> str | None:
    forms = _HONORIFICS.get(region, {}).get(formality)
    if not forms:
        return None
    return forms.get(gender) if gender and gender in forms else forms.get("any")


def compute_tone(
    profile: ToneProfile,
    *,
    region: str,
    cues: Cues,
    turn_index: int,
    known_gender: Gender | None,
    moment: Moment,
    prior_formality: str | None,
    voice: str | None = None,
) -> ToneDirective:
    """This turn's directive.

    ``region`` is the user's dialect region (one of :data:`REGIONS`; anything else is
    treated as MSA). ``turn_index`` counts the thread's turns from 0. ``known_gender``
    is a stored preference and wins over the message's own cue. ``prior_formality`` is
    the previous turn's directive formality (None on the first turn). ``voice``,
    when given, is the register already chosen by :func:`choose_register` (a
    region, "msa" or "neutral") and is used as it is.
    """
    if voice is not None:
        register = voice if voice in REGIONS or voice == NEUTRAL else "msa"
    else:
        dialect = region if region in REGIONS else "msa"
        register = "msa" if profile.register_policy == "msa" else dialect
    formality = _formality(profile, cues, turn_index=turn_index, prior=prior_formality)
    gender = known_gender or cues.self_gender
    if cues.frustration or cues.insistence:
        stance: Stance = "apologetic"
    elif cues.complaint:
        stance = "empathetic"
    else:
        stance = "neutral"
    # Transactional callers get short answers: they asked for something and did
    # not ask after our health; a frustrated caller wants the fix, not the talk.
    brevity = (cues.business and not cues.wellbeing) or stance == "apologetic"
    return ToneDirective(
        register=register,
        formality=formality,
        # The neutral voice addresses the user as MSA does (حضرتك when formal).
        honorific=_honorific("msa" if register == NEUTRAL else register, formality, gender),
        addressee_gender=gender,
        stance=stance,
        brevity=brevity,
        time_of_day=moment.time_of_day,
        modifiers=tuple(m.key for m in moment.modifiers),
        persona_name=profile.persona_name,
        greeting_style=profile.greeting_style,
        religious_greetings=profile.religious_greetings,
    )
