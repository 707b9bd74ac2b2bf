"""Facts users state about themselves, read by rules from one message (Chinese and English).

Identity (name, nickname, age, birthday), pets and family (names by species/relation), work,
school and schedule, places (home city, hometown, moves), likes, dislikes and allergies,
favourites, plans with times, and changes said in ordinary words ("搬到", "换了", "不再",
"not … anymore", "new vet"). A question is never a statement; values are trimmed to the value.
Pure: no I/O. The rule tables live in :mod:`nekoflow.memory.fact_rules`.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from nekoflow.memory.fact_labels import slot_label
from nekoflow.memory.fact_patterns import UNDATED
from nekoflow.memory.fact_rules import (
    CHANGE,
    FIRST_PERSON,
    HYPOTHETICAL,
    QUESTION_CLAUSE,
    RULES,
    THIRD_PERSON_START,
    clean_value,
)

__all__ = ["Fact", "extract_facts", "fact_key", "is_question", "multi_valued", "same_value"]

_SENTENCE = re.compile(r"[^。!?\n;]+[。!?;]*|[。!?;]+")
_CLAUSE = re.compile(r"[^,、~]+[,、~]*")
_LATIN = re.compile(r"[A-Za-z]")  # "I'm 41." holds no two letters in a row
_HAN = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact about the user: its slot, the trimmed value, the sentence and whether it is a
    change of an earlier value ("moved to", "换了", "不再")."""

    slot: str
    value: str
    sentence: str
    change: bool = False

    @property
    def label(self) -> str:
        """The slot in words, as the prompt shows it (用户的猫的名字)."""
        return slot_label(self.slot)

    @property
    def key(self) -> str:
        """What a later fact must share to restate or replace this one."""
        return fact_key(self.slot, self.value)


def multi_valued(slot: str) -> bool:
    """Likes, dislikes and allergies are sets: each object is its own fact."""
    return slot in ("user.likes", "user.dislikes", "user.allergy")


def fact_key(slot: str, value: str) -> str:
    """The consolidation key: the slot, or for likes/dislikes the object (a dislike of what was
    liked replaces the like)."""
    if slot in ("user.likes", "user.dislikes"):
        return "user.pref:" + _norm(value)
    if slot == "user.allergy":
        return "user.allergy:" + _norm(value)
    return slot


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).strip().lower()


def same_value(a: str, b: str) -> bool:
    """Two values of a slot are the same (case, width and spacing aside)."""
    return re.sub(r"\s+", " ", _norm(a)) == re.sub(r"\s+", " ", _norm(b))


def _clause_text(clause: str) -> str:
    return _norm(clause).strip(" ,、~")


def _asks(text: str) -> bool:
    """Whether a normalised clause asks: a question mark, 吗/呢, a wh-word, an inverted verb
    (a 呢 after 还没/正在/着 only marks a state: "房子还没收拾好呢")."""
    if not text:
        return False
    if text.endswith("?"):
        return True
    if _STATE_NE.search(text):
        text = text[: text.rindex("呢")]
    return QUESTION_CLAUSE.search(text) is not None


_QUOTED = re.compile(
    r"“[^”]{6,300}”|「[^」]{6,300}」|『[^』]{6,300}』|\"[^\"]{6,300}\"|\*[^*\n]{2,300}\*"
    r"|\([^()]{0,60}[\u4e00-\u9fff][^()]{0,60}\)"
)
"""Quoted speech (a line from a show, what someone else said), *role-play actions* and
(动作) in brackets: no fact of the user's. Short quotes stay: a name is often quoted."""
_GAP = re.compile(
    r"(?<=[\u4e00-\u9fff\x00\u2600-\u27bf\U0001f000-\U0001faff])\s+"
    r"(?=[\u4e00-\u9fff\x00\u2600-\u27bf\U0001f000-\U0001faff])"
)
"""A space between Chinese phrases (or emoji): QQ users separate clauses so."""

_STATE_NE = re.compile(r"(?:还没|没有|还在|正在|着|还要|也要|要|得)[^,?]{0,12}呢[\s!~.。]*$")


def is_question(clause: str) -> bool:
    """A clause asks rather than states (a question mark, 吗/呢, a wh-word, an inverted verb)."""
    return _asks(_clause_text(clause))


def _statements(sentence: str) -> str:
    """The sentence, its questions and wishes blanked ("我叫小满,你还记得吗?" keeps the first)."""
    clauses = _CLAUSE.findall(_GAP.sub(lambda g: "," + g.group()[1:], sentence))
    kept: list[str] = []
    for i, clause in enumerate(clauses):
        last = i == len(clauses) - 1
        text = _clause_text(clause)  # a question or a wish states nothing
        blank = _asks(text) or HYPOTHETICAL.search(text) is not None
        blank = blank or (last and sentence.rstrip().endswith("?"))
        kept.append("\x00" * len(clause) if blank else clause)
    return "".join(kept)


def extract_facts(message: str) -> list[Fact]:
    """The facts ``message`` states about the user, in order, one per (slot, value)."""
    text = unicodedata.normalize("NFKC", message or "")
    text = _QUOTED.sub(lambda q: "\x00" * len(q.group()), text)
    found: list[Fact] = []
    seen: set[tuple[str, str]] = set()
    for m in _SENTENCE.finditer(text):
        sentence = m.group().strip()
        if not sentence:
            continue
        body = FIRST_PERSON.sub("我", _statements(sentence))
        if not body.strip("\x00 "):
            continue
        third = THIRD_PERSON_START.search(body) is not None
        change = CHANGE.search(body) is not None
        latin, cjk = _LATIN.search(body) is not None, _HAN.search(body) is not None
        for rule in RULES:
            if (third and not rule.first_person) or not (latin if rule.english else cjk):
                continue
            for hit in rule.pattern.finditer(body):
                for slot, value in rule.read(hit):
                    value = clean_value(slot, value)
                    if not value or (slot, _norm(value)) in seen:
                        continue
                    seen.add((slot, _norm(value)))
                    found.append(Fact(slot, value, sentence, change or rule.change))
    timed = {f.slot for f in found if f.value not in UNDATED}
    return [f for f in found if f.value not in UNDATED or f.slot not in timed]
