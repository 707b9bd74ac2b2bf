"""``ScriptedChatModel``: the deterministic, offline stand-in chat model of the demo and the tests.

It is NOT a real language model. It answers in the character format of seed ``memory-builder.md``
(``【emotion】content<tts>(action)``, one to three segments) with replies picked from phrase banks
by a stable hash (SHAKE-256, never Python's randomized ``hash()``) of ``seed``, the system prompt
and the last user message: the same input always gives the same reply, different messages differ. It
reacts to greetings, farewells, questions, thanks, affection and negative words (Chinese and
English) and echoes a short piece of the user's message. With ``json_mode=True`` it returns a
review JSON object (the LLM review mode's shape) derived from the turn under review, or — when
the system prompt asks for world-book ``{"entries": [...]}`` — placeholder entries built from the
request's book name, topic and count, labelled as scripted.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nekoflow.errors import ConfigError, InputError
from nekoflow.llm.base import (
    ChatResult,
    LLMError,
    LLMServerError,
    Message,
    content_text,
    validate_messages,
)
from nekoflow.llm.streaming import TokenSink, replay_in_chunks

SCRIPTED_MODEL_NAME = "scripted"
"""``ChatResult.model`` and ``ScriptedChatModel.name``: says plainly that no real model answered."""

# --------------------------------------------------------------------------------------------
# reading the user's message
# --------------------------------------------------------------------------------------------

_NEGATIVE = re.compile(
    r"不喜欢|不爱|讨厌|烦死|好烦|真烦|滚|生气|失望|算了|冷漠|无聊|难过|伤心|闭嘴|"
    r"\b(?:hate|annoying|annoyed|angry|disappointed|boring|shut up|go away|sad|upset|"
    r"don'?t like)\b",
    re.IGNORECASE,
)
_AFFECTION = re.compile(
    r"喜欢|爱|想你|好想|亲爱|宝贝|心动|感动|暖|抱抱|可爱|"
    r"\b(?:love|miss you|like you|adore|darling|sweetheart|cute|hug)\b",
    re.IGNORECASE,
)
_TRUST = re.compile(r"信任|放心|相信你|靠你|承诺|约定|\b(?:trust|promise|count on you)\b", re.I)
_THANKS = re.compile(
    r"谢谢|感谢|多谢|辛苦了|\b(?:thanks?|thank you|thx|appreciate)\b", re.IGNORECASE
)
_FAREWELL = re.compile(
    r"再见|拜拜|晚安|回头见|下次见|我走了|\b(?:bye|goodbye|good night|see you|farewell)\b",
    re.IGNORECASE,
)
_GREETING = re.compile(
    r"你好|您好|早上好|早安|中午好|下午好|晚上好|嗨|哈喽|在吗|"
    r"\b(?:hi|hey|hello|good morning|good afternoon|good evening|howdy)\b",
    re.IGNORECASE,
)
_QUESTION = re.compile(
    r"[??]|吗|什么|为什么|怎么|哪里|哪儿|谁|几点|多少|是不是|能不能|要不要|"
    r"^\s*(?:what|why|how|where|who|when|which|can|could|do|does|did|is|are|will|would|should)\b",
    re.IGNORECASE,
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef]")
_LATIN = re.compile(r"[A-Za-z]")
_FORMAT_CHARS = re.compile(r"[【】\[\]<>《》()()《》{}「」\"]")
_CLAUSE_SPLIT = re.compile(r"[,,。.!!??;;…\n\u301c\uff5e~]+")
_FILLERS = frozenset({"嗯嗯", "哈哈", "呃呃", "oh", "well", "so", "um", "hmm", "ok", "okay"})
_NAME_PATTERNS = (
    re.compile(r"你(?:叫|的名字是|的名字叫)\s*([^\s,,。.!!、;;::()()]{1,12})"),
    re.compile(r"\byour name is\s+([A-Za-z][\w-]{0,23})", re.IGNORECASE),
    re.compile(r"\byou are\s+([A-Z][\w-]{0,23})"),
)

INTENTS: tuple[str, ...] = (
    "negative",
    "affection",
    "thanks",
    "farewell",
    "greeting",
    "question",
    "chat",
)
"""What the scripted model recognises in a user message, checked in this order."""


def detect_intent(text: str) -> str:
    """The first of :data:`INTENTS` whose words occur in ``text`` (``"chat"`` when none)."""
    for intent, pattern in (
        ("negative", _NEGATIVE),
        ("affection", _AFFECTION),
        ("thanks", _THANKS),
        ("farewell", _FAREWELL),
        ("greeting", _GREETING),
        ("question", _QUESTION),
    ):
        if pattern.search(text):
            return intent
    return "chat"


def is_chinese(text: str) -> bool:
    """Whether ``text`` is mostly CJK (replies follow the user's language; empty → Chinese)."""
    cjk, latin = len(_CJK.findall(text)), len(_LATIN.findall(text))
    return cjk > 0 or latin == 0


def echo_of(text: str, chinese: bool) -> str:
    """A short, format-safe piece of ``text`` to quote back (first clause, ≤12 chars / 6 words)."""
    cleaned = _FORMAT_CHARS.sub("", text)
    clauses = [" ".join(c.split()) for c in _CLAUSE_SPLIT.split(cleaned)]
    clauses = [c for c in clauses if c]
    if not clauses:
        return ""
    # skip a leading interjection ("嗯,…", "Oh, …") when something longer follows
    clause = next((c for c in clauses if len(c) >= 2 and c.lower() not in _FILLERS), clauses[0])
    if chinese:
        return clause[:12]
    return " ".join(clause.split(" ")[:6])[:40]


def character_name_from(system_prompt: str) -> str | None:
    """The character's name stated in a system prompt ("你叫钦灵", "Your name is Rin"), if any."""
    for pattern in _NAME_PATTERNS:
        found = pattern.search(system_prompt)
        if found:
            return found.group(1)
    return None


# --------------------------------------------------------------------------------------------
# phrase banks: (emotion, content, tts, action); content may use {echo} and {me}
# --------------------------------------------------------------------------------------------

_Phrase = tuple[str, str, str, str]

_OPENERS_ZH: dict[str, tuple[_Phrase, ...]] = {
    "empty": (
        ("开心", "{me}在这里哦", "ここにいるよ", "轻轻地摇了摇尾巴"),
        ("好奇", "嗯?怎么不说话呀", "どうしたの?", "歪着头看着你"),
    ),
    "greeting": (
        ("开心", "{echo}~你来啦!{me}等你好久了", "来たね!ずっと待ってたよ", "轻轻地摇了摇尾巴"),
        ("高兴", "听到你说{echo},{me}就知道是你啦", "やっぱりあなただ", "蹦蹦跳跳地跑过来"),
        ("惊喜", "哇,是你呀!{echo}~", "わあ、あなただ!", "眼睛一下子亮了起来"),
    ),
    "farewell": (
        ("不舍", "{echo}……这就要走了吗", "もう行っちゃうの", "拉住了你的衣角"),
        ("温柔", "嗯,{echo}。路上小心哦,{me}会想你的", "気をつけてね", "挥了挥小爪子"),
        ("不舍", "{echo}?那说好了,下次还要来找{me}", "約束だよ、また来てね", "竖起小拇指"),
    ),
    "thanks": (
        ("害羞", "{echo}?诶嘿嘿,不用谢啦", "えへへ、どういたしまして", "不好意思地挠了挠头"),
        ("开心", "你说{echo},能帮上忙{me}也很高兴!", "役に立ててうれしい!", "得意地挺起胸膛"),
        ("感动", "听到你说{echo},心里暖暖的", "心が温かくなったよ", "捂住了脸颊"),
    ),
    "affection": (
        ("害羞", "你、你突然说{echo}什么的……", "き、急にそんなこと……", "脸一下子红了"),
        ("心动", "{echo}……{me}也最喜欢你了", "わたしも……大好き", "把脸埋进了你的怀里"),
        ("开心", "嘿嘿,被你说{echo},好开心", "そう言われるとうれしいな", "尾巴摇个不停"),
    ),
    "negative": (
        ("委屈", "{echo}……是{me}做错什么了吗", "わたし、何か悪いことした?", "耳朵耷拉了下来"),
        ("担心", "你说{echo},是不是心情不好呀", "機嫌が悪いの?", "小心翼翼地靠近了一点"),
        ("难过", "别说{echo}嘛,{me}会难过的", "そんなこと言わないで", "低下了头"),
    ),
    "question": (
        ("好奇", "你问{echo}?让{me}想想", "うーん、考えさせて", "歪着头思考"),
        ("思考", "嗯……关于{echo},{me}觉得呀", "えっと、わたしはね", "托着下巴"),
        ("认真", "{echo}?这个问题问得好!", "いい質問だね!", "认真地点了点头"),
    ),
    "chat": (
        ("好奇", "{echo}?然后呢然后呢", "それで、それで?", "凑近了一点"),
        ("开心", "嗯嗯,{echo},{me}在听哦", "うんうん、聞いてるよ", "乖乖地坐好"),
        ("认真", "原来是{echo}呀", "そうだったんだ", "若有所思地点头"),
        ("调皮", "{echo}……嘿嘿,{me}记住了", "覚えたよ", "偷偷记在小本本上"),
    ),
}

_FOLLOWUPS_ZH: dict[str, tuple[_Phrase, ...]] = {
    "empty": (("好奇", "今天想和{me}聊什么呀?", "今日は何を話したい?", ""),),
    "greeting": (
        ("好奇", "今天想和{me}聊什么呀?", "今日は何を話したい?", ""),
        ("期待", "今天过得怎么样?", "今日はどうだった?", ""),
    ),
    "farewell": (
        ("温柔", "晚上要好好休息哦", "ゆっくり休んでね", ""),
        ("期待", "明天也要来哦", "明日も来てね", ""),
    ),
    "thanks": (
        ("开心", "有什么事随时找{me}就好", "いつでも呼んでね", ""),
        ("害羞", "以后也请多多指教", "これからもよろしくね", ""),
    ),
    "affection": (
        ("害羞", "不许笑{me}哦", "笑わないでね", ""),
        ("温柔", "能一直这样待在一起就好了", "ずっと一緒にいられたらいいな", ""),
    ),
    "negative": (
        ("担心", "有什么不开心的,可以和{me}说说", "話してくれる?", ""),
        ("委屈", "{me}会乖乖的,别生气了好不好", "怒らないで", ""),
    ),
    "question": (
        ("认真", "不过{me}也不是很确定呢", "でも自信はないかも", ""),
        ("调皮", "你猜猜看?", "当ててみて?", ""),
    ),
    "chat": (
        ("好奇", "后来怎么样了?", "それからどうなったの?", ""),
        ("开心", "和你聊天真开心", "話せて楽しい", ""),
    ),
}

_FLOURISHES_ZH: tuple[_Phrase, ...] = (
    ("开心", "喵~", "にゃ~", "蹭了蹭你的手"),
    ("害羞", "唔……", "うぅ……", "把尾巴卷了起来"),
    ("调皮", "嘿嘿", "えへへ", "眨了眨眼睛"),
    ("温柔", "嗯", "うん", "安静地看着你"),
)

_OPENERS_EN: dict[str, tuple[_Phrase, ...]] = {
    "empty": (("开心", "I'm right here", "ここにいるよ", "wags tail"),),
    "greeting": (
        ("开心", '"{echo}"! You\'re here, I was waiting for you', "来たね!", "wags tail"),
        ("高兴", '"{echo}" to you too~', "こんにちは~", "waves happily"),
        ("惊喜", 'Oh, it\'s you! "{echo}"~', "わあ、あなただ!", "eyes light up"),
    ),
    "farewell": (
        ("不舍", '"{echo}"... leaving already?', "もう行っちゃうの", "tugs at your sleeve"),
        ("温柔", '"{echo}". Take care on the way, okay?', "気をつけてね", "waves a little paw"),
    ),
    "thanks": (
        ("害羞", '"{echo}"? Ehehe, you\'re welcome', "えへへ", "scratches head shyly"),
        ("开心", 'You said "{echo}"... glad I could help!', "うれしい!", "puffs out chest"),
    ),
    "affection": (
        ("害羞", 'W-wait, "{echo}"? So suddenly...', "き、急にそんなこと……", "blushes bright red"),
        ("心动", '"{echo}"... I like you a lot too', "わたしも……大好き", "hides face in your arm"),
    ),
    "negative": (
        ("委屈", 'Did I do something wrong? "{echo}"...', "何か悪いことした?", "ears droop"),
        ("担心", '"{echo}"... are you feeling down?', "機嫌が悪いの?", "scoots a little closer"),
    ),
    "question": (
        ("好奇", '"{echo}"? Hmm, let me think', "うーん、考えさせて", "tilts head"),
        ("认真", '"{echo}"? Good question!', "いい質問だね!", "nods seriously"),
    ),
    "chat": (
        ("好奇", '"{echo}"? And then what?', "それで、それで?", "leans in"),
        ("开心", 'Mhm, "{echo}", I\'m listening', "うんうん、聞いてるよ", "sits up straight"),
        ("认真", 'So it was "{echo}"', "そうだったんだ", "nods thoughtfully"),
    ),
}

_FOLLOWUPS_EN: dict[str, tuple[_Phrase, ...]] = {
    "empty": (("好奇", "What shall we talk about?", "何を話そうか?", ""),),
    "greeting": (("好奇", "What shall we talk about today?", "今日は何を話したい?", ""),),
    "farewell": (("期待", "Come back tomorrow, promise?", "明日も来てね", ""),),
    "thanks": (("开心", "Call me anytime", "いつでも呼んでね", ""),),
    "affection": (("温柔", "Let's stay together like this", "ずっと一緒にいようね", ""),),
    "negative": (("担心", "You can tell me what's wrong", "話してくれる?", ""),),
    "question": (("调皮", "Want to guess?", "当ててみて?", ""),),
    "chat": (("好奇", "What happened next?", "それからどうなったの?", ""),),
}

_FLOURISHES_EN: tuple[_Phrase, ...] = (
    ("开心", "Nya~", "にゃ~", "nuzzles your hand"),
    ("调皮", "Hehe", "えへへ", "winks"),
    ("温柔", "Mm", "うん", "watches you quietly"),
)

_FALLBACK_ECHO_ZH = "这个"
_FALLBACK_ECHO_EN = "that"


@dataclass(frozen=True)
class _Turn:
    """What the scripted model reads from the messages."""

    system: str
    user: str
    previous_assistant: str
    prompt_chars: int


def _read_turn(messages: list[dict[str, Any]]) -> _Turn:
    system = "\n".join(
        content_text(m.get("content")) for m in messages if m["role"] in ("system", "developer")
    )
    user = ""
    previous_assistant = ""
    last_user_index = -1
    for i, m in enumerate(messages):
        if m["role"] == "user":
            user, last_user_index = content_text(m.get("content")), i
    for m in messages[:last_user_index] if last_user_index >= 0 else messages:
        if m["role"] == "assistant":
            previous_assistant = content_text(m.get("content"))
    chars = sum(len(content_text(m.get("content"))) for m in messages)
    return _Turn(system, user, previous_assistant, chars)


_ENTRIES_REQUEST = '{"entries"'
"""What a world-book generation prompt (``nekoflow.api.ai_generate``) asks the model to return."""

_ENTRY_ASPECTS: tuple[tuple[str, str], ...] = (
    ("起源", "lore"),
    ("地点", "location"),
    ("人物", "npc"),
    ("规则", "rule"),
    ("事件", "event"),
    ("势力", "faction"),
    ("风俗", "style"),
    ("秘密", "secret"),
)


class _Dice:
    """A deterministic stream of choices from a SHAKE-256 digest of the input."""

    def __init__(self, *parts: str) -> None:
        material = "\x1f".join(parts).encode("utf-8")
        self._stream = hashlib.shake_256(material).digest(256)
        self._pos = 0

    def below(self, n: int) -> int:
        """A number in ``0 … n-1``."""
        if self._pos + 2 > len(self._stream):
            self._stream = hashlib.shake_256(self._stream).digest(256)
            self._pos = 0
        value = int.from_bytes(self._stream[self._pos : self._pos + 2], "big")
        self._pos += 2
        return value % n

    def pick(self, options: Sequence[Any]) -> Any:
        """One of ``options``."""
        return options[self.below(len(options))]

    def unit(self) -> float:
        """A number in [0, 1)."""
        return self.below(10_000) / 10_000


def _tokens(chars: int) -> int:
    return max(1, math.ceil(chars / 2))


def format_segment(emotion: str, content: str, tts: str = "", action: str = "") -> str:
    """One reply segment ``【emotion】content<tts>(action)``, leaving out the empty parts."""
    out = f"【{emotion}】" if emotion else ""
    out += content
    if tts:
        out += f"<{tts}>"
    if action:
        out += f"({action})"
    return out


class ScriptedChatModel:
    """Deterministic offline chat model — the demo's and the tests' default, not a real LLM.

    ``seed`` varies the replies between instances; ``character_name`` is used in replies (else the
    name in the system prompt, e.g. "你叫钦灵"). ``fail_times`` makes the first N calls raise
    ``failure`` (for retry tests); the count is per instance and thread-safe. Token counts are
    estimates (characters / 2) so usage tracking has numbers to add up. :meth:`stream` hands the
    same reply over in pieces of ``stream_chunk_chars`` characters, ``stream_delay`` s apart.
    """

    stream_chunk_chars: int = 6
    stream_delay: float = 0.0

    def __init__(
        self,
        seed: int = 0,
        character_name: str | None = None,
        *,
        fail_times: int = 0,
        failure: type[LLMError] = LLMServerError,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"seed: must be an integer, got {seed!r}", field="seed")
        if character_name is not None and not isinstance(character_name, str):
            raise ConfigError("character_name: must be a string or None", field="character_name")
        if isinstance(fail_times, bool) or not isinstance(fail_times, int) or fail_times < 0:
            raise ConfigError(
                f"fail_times: must be a non-negative integer, got {fail_times!r}",
                field="fail_times",
            )
        if not (isinstance(failure, type) and issubclass(failure, LLMError)):
            raise ConfigError(
                f"failure: must be an LLMError subclass, got {failure!r}", field="failure"
            )
        self.name = SCRIPTED_MODEL_NAME
        self.seed = seed
        self.character_name = (character_name or "").strip() or None
        self.fail_times = fail_times
        self.failure = failure
        self._calls = 0
        self._failed = 0
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"ScriptedChatModel(seed={self.seed}, character_name={self.character_name!r}, "
            f"fail_times={self.fail_times}, failure={self.failure.__name__})"
        )

    @property
    def calls(self) -> int:
        """How many times :meth:`complete` was called (failed calls included)."""
        with self._lock:
            return self._calls

    @property
    def failures_left(self) -> int:
        """How many of the configured failures are still to come."""
        with self._lock:
            return self.fail_times - self._failed

    def _maybe_fail(self) -> None:
        with self._lock:
            self._calls += 1
            if self._failed >= self.fail_times:
                return
            self._failed += 1
            n = self._failed
        raise self.failure(f"scripted failure {n} of {self.fail_times} ({self.failure.__name__})")

    def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """Reply to ``messages`` deterministically (temperature is ignored); see the class doc."""
        started = time.perf_counter()
        checked = validate_messages(messages)
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens <= 0
        ):
            raise InputError(
                f"max_tokens: must be a positive integer, got {max_tokens!r}", field="max_tokens"
            )
        self._maybe_fail()
        turn = _read_turn(checked)
        dice = _Dice(str(self.seed), turn.system, turn.user, "json" if json_mode else "text")
        finish = "stop"
        if json_mode and _ENTRIES_REQUEST in turn.system:
            text = json.dumps(self._entries(turn, dice), ensure_ascii=False)
        elif json_mode:
            text = json.dumps(self._review(turn, dice), ensure_ascii=False)
        else:
            segments = self._segments(turn, dice)
            if max_tokens is not None:
                while len(segments) > 1 and _tokens(len("".join(segments))) > max_tokens:
                    segments.pop()
                    finish = "length"
            text = "".join(segments)
        return ChatResult(
            text=text,
            model=SCRIPTED_MODEL_NAME,
            prompt_tokens=_tokens(turn.prompt_chars),
            completion_tokens=_tokens(len(text)),
            finish_reason=finish,
            latency_ms=(time.perf_counter() - started) * 1000.0,
        )

    def stream(
        self,
        messages: Sequence[Message],
        on_delta: TokenSink,
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool = False,
    ) -> ChatResult:
        """:meth:`complete`, handed to ``on_delta`` in pieces (see the class doc)."""
        started = time.perf_counter()
        result = self.complete(
            messages, temperature=temperature, max_tokens=max_tokens, json_mode=json_mode
        )
        return replay_in_chunks(
            result,
            on_delta,
            chunk_chars=self.stream_chunk_chars,
            delay=self.stream_delay,
            started=started,
        )

    # -- prose ------------------------------------------------------------------------------

    def _segments(self, turn: _Turn, dice: _Dice) -> list[str]:
        chinese = is_chinese(turn.user) if turn.user.strip() else is_chinese(turn.system)
        intent = detect_intent(turn.user) if turn.user.strip() else "empty"
        name = _FORMAT_CHARS.sub("", self.character_name or character_name_from(turn.system) or "")
        echo = echo_of(turn.user, chinese)
        if chinese:
            openers, followups, flourishes = _OPENERS_ZH, _FOLLOWUPS_ZH, _FLOURISHES_ZH
            me = name or "我"
            echo_text = f"「{echo}」" if echo else _FALLBACK_ECHO_ZH
        else:
            openers, followups, flourishes = _OPENERS_EN, _FOLLOWUPS_EN, _FLOURISHES_EN
            me = name or "I"
            echo_text = echo or _FALLBACK_ECHO_EN
        count = 1 + dice.below(3)
        chosen: list[_Phrase] = [dice.pick(openers[intent])]
        if count >= 2:
            chosen.append(dice.pick(followups[intent]))
        if count >= 3:
            chosen.append(dice.pick(flourishes))
        segments = []
        for i, (emotion, content, tts, action) in enumerate(chosen):
            body = content.replace("{echo}", echo_text).replace("{me}", me)
            keep_tts = bool(tts) and dice.below(4) != 0  # tts is optional: present 3 times in 4
            keep_action = bool(action) and (i == 0 or dice.below(2) == 0)
            segments.append(
                format_segment(
                    emotion, body, tts if keep_tts else "", action if keep_action else ""
                )
            )
        return segments

    # -- world-book entries JSON -------------------------------------------------------------

    def _entries(self, turn: _Turn, dice: _Dice) -> dict[str, Any]:
        """``count`` distinct placeholder entries about the requested topic (or the book)."""
        count = re.search(r"生成\s*(\d+)\s*个", turn.user)
        topic = re.search(r"主题方向[::]\s*(.+)", turn.user)
        book = re.search(r"世界书「(.+?)」", turn.user)
        base = (topic.group(1) if topic else book.group(1) if book else "世界").strip()[:20]
        n = max(1, min(int(count.group(1)) if count else 3, len(_ENTRY_ASPECTS)))
        start = dice.below(len(_ENTRY_ASPECTS))
        entries = []
        for i in range(n):
            aspect, entry_type = _ENTRY_ASPECTS[(start + i) % len(_ENTRY_ASPECTS)]
            entries.append(
                {
                    "name": f"{base}·{aspect}",
                    "keywords": [base, f"{base}{aspect}", aspect],
                    "content": f"{base}的{aspect}(离线脚本模型生成的示例条目;"
                    "设置 NEKOFLOW_LLM_PROVIDER=openai 接入真实模型后会得到具体设定)。",
                    "match_mode": "any",
                    "priority": 40 + 5 * dice.below(8),
                    "entry_type": entry_type,
                    "trigger_sources": ["user"],
                    "tags": ["scripted"],
                }
            )
        return {"entries": entries}

    # -- review JSON ------------------------------------------------------------------------

    def _review(self, turn: _Turn, dice: _Dice) -> dict[str, Any]:
        user, assistant = turn.user, turn.previous_assistant
        choice: dict[str, Any] = {}
        try:
            data = json.loads(turn.user)
        except ValueError:
            data = None
        if isinstance(data, dict):  # the LLM review sends the turn as a JSON object
            user = str(data.get("user_message") or "")
            assistant = str(data.get("assistant_message") or data.get("ai_reply") or "")
            if isinstance(data.get("selected_choice"), dict):
                choice = data["selected_choice"]
        level = choice.get("level") if choice.get("level") in _STORY else None
        choice_text = choice.get("text") if isinstance(choice.get("text"), str) else ""
        intent = detect_intent(user)
        negative = _NEGATIVE.search(user) is not None
        affection = 1 if _AFFECTION.search(f"{user} {assistant}") and not negative else 0
        affection -= 1 if negative else 0
        trust = 1 if _THANKS.search(user) or _TRUST.search(user) else 0
        if level in ("important", "turning_point"):
            affection += 2 if level == "turning_point" else 1
            trust += 1
        familiarity = 1
        total = abs(affection) + abs(trust) + familiarity
        memory_value = _MEMORY_VALUE.get(level or "", 0.0) or min(
            1.0,
            (0.3 if len(user) > 100 else 0.2 if len(user) > 50 else 0.0)
            + (0.2 if trust else 0.0)
            + (0.2 if affection > 0 else 0.0)
            + round(dice.unit() * 0.2, 2),
        )
        memory_value = round(memory_value, 2)
        write = bool(user.strip() or assistant.strip()) and (
            memory_value >= 0.65 or level in _STORY_LEVELS_WITH_PLOT or total >= 3
        )
        items = []
        if write:
            items.append(
                {
                    "target": "user",
                    "mem_type": {"important": "relationship", "turning_point": "event"}.get(
                        level or "", "short"
                    ),
                    "title": (choice_text or user or "对话记录")[:30],
                    "content": f"用户:{user[:200]}\n角色:{assistant[:200]}",
                    "importance": memory_value,
                    "ttl": "long" if memory_value >= 0.8 else "short",
                }
            )
        risk = round(0.3 + dice.unit() * 0.2 if negative else dice.unit() * 0.1, 2)
        engagement = (
            0.9 if len(user) > 200 else 0.7 if len(user) > 80 else 0.5 if len(user) > 30 else 0.3
        )
        return {
            "should_write_memory": write,
            "memory_items": items,
            "relationship_delta": {
                "affection": affection,
                "trust": trust,
                "familiarity": familiarity,
                "dependency": 0,
                "security": 1 if intent in ("thanks", "affection") else 0,
                "jealousy": 0,
                "reason": f"scripted review: {intent}",
            },
            "plot_update": {
                "should_create_node": True,
                "level": level,
                "title": (choice_text or user)[:30],
                "summary": f"用户:{user[:100]}",
            }
            if level in _STORY_LEVELS_WITH_PLOT
            else None,
            "world_book_update": {
                "should_update": True,
                "reason": f"plot level {level}",
                "entry_title": (choice_text or user)[:30],
                "entry_content": assistant[:200],
            }
            if level in ("turning_point", "ending")
            else None,
            "scores": {
                "character_fidelity": round(0.7 + dice.unit() * 0.25, 2),
                "immersion": round(0.6 + dice.unit() * 0.3, 2),
                "relationship_progress": round(min(1.0, total / 5), 2),
                "story_progress": _STORY.get(level or "", 0.1),
                "memory_value": memory_value,
                "world_consistency": round(0.75 + dice.unit() * 0.2, 2),
                "user_engagement": engagement,
                "risk": risk,
            },
            "skipped": not write and level is None and memory_value < 0.3,
        }


_STORY: dict[str, float] = {"normal": 0.2, "important": 0.6, "turning_point": 0.9, "ending": 1.0}
_STORY_LEVELS_WITH_PLOT = ("important", "turning_point", "ending")
_MEMORY_VALUE: dict[str, float] = {"important": 0.8, "turning_point": 0.9, "ending": 0.95}
