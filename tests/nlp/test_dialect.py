"""Dialect identification: shipped artefact, result shape, pooling."""

from __future__ import annotations

import csv
import math
from importlib import resources
from pathlib import Path

import pytest

from nlp import REGIONS, DialectResult, load_dialect_identifier, pool_dialects
from nlp.dialect import LinearDialectModel, read_dialect_model

SUPPORT_SETS = Path(__file__).resolve().parents[2] / "bench" / "data"


def test_artefact_is_shipped_and_small() -> None:
    blob = resources.files("nlp.data").joinpath("dialect.npz.gz").read_bytes()
    assert 0 < len(blob) <= 5 * 1024 * 1024


def test_loader_is_cached() -> None:
    assert load_dialect_identifier() is load_dialect_identifier()


@pytest.mark.parametrize("name", ["support_dialect.tsv", "support_dialect_2.tsv"])
def test_support_style_messages_mostly_right(name: str) -> None:
    """A floor under generalisation to support requests (our own sets, 6 regions):
    a retrained artefact that forgets how customers write fails here."""
    with (SUPPORT_SETS / name).open(encoding="utf-8", newline="") as f:
        rows = [(r["text"], r["region"]) for r in csv.DictReader(f, delimiter="\t")]
    model = load_dialect_identifier()
    right = sum(model.identify(text).region == region for text, region in rows)
    assert {region for _, region in rows} == set(REGIONS)
    assert right / len(rows) >= 0.65, f"{right}/{len(rows)} support messages identified"


def test_marker_behind_a_conjunction_counts() -> None:
    # و/ف glued to an MSA marker (ولم، فماذا) must still count as the marker.
    model = read_dialect_model()
    with_marker = model.identify("ولم يصلني الطلب").scores["msa"]
    model.marker_weight = 0.0
    assert model.identify("ولم يصلني الطلب").scores["msa"] < with_marker


def test_word_cache_is_bounded_and_gives_the_same_answer() -> None:
    model = read_dialect_model()
    model._max_entries = 8
    text = "عايز اعرف الاوردر بتاعي فين يا جماعة لو سمحت بسرعة"
    first = model.identify(text)
    for _ in range(3):
        assert model.identify(text) == first
    assert len(model._entries) <= 8 + len(text.split())


@pytest.mark.parametrize(
    ("text", "region"),
    [
        # Customer-support style, two to four words, strong markers.
        ("عايز اشحن الرصيد", "egyptian"),
        ("النت مش شغال خالص", "egyptian"),
        ("شو القصة هلق", "levantine"),
        ("وش السالفة", "gulf"),
        ("ابي اغير الباقة", "gulf"),
        ("واش كاين شي حل", "maghrebi"),
        ("بغيت نبدل الكود دابا", "maghrebi"),
        ("شلونك عيني شكو ماكو", "iraqi"),
    ],
)
def test_identifies_short_dialect_messages(text: str, region: str) -> None:
    assert load_dialect_identifier().identify(text).region == region


@pytest.mark.parametrize("text", ["", "😂😂", "URL @USER", "ok", "ـــ", "ب" * 5000])
def test_scores_are_a_distribution(text: str) -> None:
    res = load_dialect_identifier().identify(text)
    assert set(res.scores) == set(REGIONS)
    assert math.isclose(sum(res.scores.values()), 1.0, abs_tol=1e-6)
    assert res.confidence == max(res.scores.values())
    assert res.scores[res.region] == res.confidence


def _res(**probs: float) -> DialectResult:
    scores = {r: probs.get(r, 0.01) for r in REGIONS}
    total = sum(scores.values())
    scores = {r: p / total for r, p in scores.items()}
    best = max(scores, key=scores.__getitem__)
    return DialectResult(best, scores[best], scores)


def test_pool_accumulates_evidence() -> None:
    unsure = _res(gulf=0.4, iraqi=0.35)
    pooled = pool_dialects([unsure, unsure, unsure])
    assert pooled.region == "gulf"
    assert pooled.confidence > unsure.confidence  # the thread's dialect stabilises
    assert math.isclose(sum(pooled.scores.values()), 1.0, abs_tol=1e-9)


def test_pool_weights_and_confident_message_wins() -> None:
    a, b = _res(egyptian=0.9), _res(levantine=0.5, egyptian=0.2)
    assert pool_dialects([a, b, b]).region == "egyptian"
    assert pool_dialects([a, b], weights=[0.0, 1.0]).region == "levantine"


def test_pool_of_nothing_is_uniform() -> None:
    pooled = pool_dialects([])
    assert all(math.isclose(p, 1 / len(REGIONS)) for p in pooled.scores.values())


def test_pool_with_real_messages() -> None:
    model = load_dialect_identifier()
    thread = ["السلام عليكم", "عايز اعرف الفاتورة", "ليه كده الخدمة وحشة"]
    assert pool_dialects([model.identify(t) for t in thread]).region == "egyptian"


def test_short_messages_are_tempered_not_changed() -> None:
    # Temperature per message length: a one-word message must not look as sure
    # as a whole one, and the predicted region never changes.
    import numpy as np

    plain = read_dialect_model()
    w, nb = plain._w[:, :6], plain._w[:, 6:]
    hot = LinearDialectModel(w, np.asarray(plain._b), nb, temperature=np.array([1.0]))
    tempered = LinearDialectModel(w, np.asarray(plain._b), nb, temperature=np.array([3.0, 1.0]))
    one, two = "مرحبا", "عايز اشحن"
    assert tempered.identify(one).region == hot.identify(one).region
    assert tempered.identify(one).confidence < hot.identify(one).confidence
    assert tempered.identify(two).scores == hot.identify(two).scores  # ≥ 2 words: T = 1


def test_shipped_temperatures_are_at_least_one() -> None:
    temps = read_dialect_model()._temps
    assert len(temps) == 8 and min(temps) >= 1.0


def test_arabizi_markers_keep_their_region_through_transliteration() -> None:
    from nlp.dialect import dialect_words

    # "wach" letter by letter is «وش» (Gulf); it is the Maghrebi واش.
    assert dialect_words("wach khassni nkhalles cash daba?")[:2] == ["واش", "خاصني"]
    assert dialect_words("ana 3ayza a3raf delwa2ty")[1::2] == ["عايزه", "دلوقتي"]
