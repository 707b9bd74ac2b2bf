"""The rate-limit reply's logic: the config key, the notice marks, and the one-reply-per-window
decision in process and in real Redis (also two processes racing on one limit)."""

from __future__ import annotations

import configparser
import multiprocessing
import time

import pytest
import redis

from nekoflow.delivery.base import RateLimit
from nekoflow.delivery.ratelimit import InMemoryRateLimiter, NoRateLimiter
from nekoflow.delivery.ratelimit_redis import RedisRateLimiter
from nekoflow.errors import ConfigError
from nekoflow.flow.limits import (
    NOTICE_SUFFIX,
    REDIS_MARKS,
    NoticeMarks,
    Verdict,
    acquire,
    claim_notice,
    marks_to_set,
)
from nekoflow.flow.policy import REPLY_MAX_CHARS, FlowPolicy, parse_flow_config
from tests.conftest import REDIS_URL

REPLY = "慢一点，我跟不上啦"


def parse(text: str):
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(text)
    return parse_flow_config(parser)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- config.ini ---------------------------------------------------------------------------


def test_reply_key_global_channel_override_and_off() -> None:
    cfg = parse(
        f"""
[conversation_flow]
rate_limit_user = 10/60
rate_limit_reply = {REPLY}
[conversation_flow_qq]
rate_limit_reply = 请稍等一下
[conversation_flow_telegram]
rate_limit_reply =
"""
    )
    assert cfg.default.rate_limit_reply == REPLY
    assert cfg.for_channel("web").rate_limit_reply == REPLY
    assert cfg.for_channel("qq").rate_limit_reply == "请稍等一下"
    assert cfg.for_channel("telegram").rate_limit_reply is None  # empty: no reply
    assert parse("").default.rate_limit_reply is None  # absent: no reply
    assert FlowPolicy().rate_limit_reply is None


@pytest.mark.parametrize(
    "value",
    [
        "喵" * (REPLY_MAX_CHARS + 1),
        "慢一点 ; over a limit: this reply",  # an inline comment would be sent to the user
        "慢一点   # comment",
        "慢一点\x07",
    ],
)
def test_bad_reply_names_the_section_and_key(value: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse(f"[conversation_flow_qq]\nrate_limit_reply = {value}\n")
    assert info.value.field == "conversation_flow_qq.rate_limit_reply"
    assert "rate_limit_reply" in str(info.value)


def test_reply_may_span_lines_and_use_semicolons_without_a_space() -> None:
    cfg = parse("[conversation_flow]\nrate_limit_reply = 慢一点；\n  我跟不上啦\n")
    assert cfg.default.rate_limit_reply == "慢一点；\n我跟不上啦"


# --- notice marks (pure) ------------------------------------------------------------------


def test_marks_are_the_full_limits_living_until_they_have_room() -> None:
    assert marks_to_set({"flow:user:web:u1": 12.5, "flow:group:web:g": 0.0}) == {
        "flow:user:web:u1" + NOTICE_SUFFIX: 12.5
    }
    assert marks_to_set({"k": 1e-9}) == {"k" + NOTICE_SUFFIX: 0.001}
    assert marks_to_set({}) == {}


def test_notice_marks_are_set_once_until_they_expire() -> None:
    clock = Clock()
    marks = NoticeMarks(clock)
    assert marks.claim({"a": 10.0}) is True
    assert marks.claim({"a": 10.0}) is False
    assert marks.claim({"a": 10.0, "b": 5.0}) is True  # a second full limit: its own reply
    assert marks.claim({"a": 10.0, "b": 5.0}) is False
    clock.now += 10.0
    assert marks.claim({"a": 10.0}) is True  # the next window
    assert marks.claim({}) is False


# --- one reply per window: in process ---------------------------------------------------

USER = RateLimit(key="flow:user:web:u1", count=2, period=10)
GROUP = RateLimit(key="flow:group:web:g1", count=3, period=10)


def test_in_process_one_notice_per_window_per_full_limit() -> None:
    clock = Clock()
    limiter = InMemoryRateLimiter(clock=clock)
    verdicts = [acquire(limiter, [USER], notice=True) for _ in range(5)]
    assert [v.wait > 0 for v in verdicts] == [False, False, True, True, True]
    assert [v.notice for v in verdicts] == [False, False, True, False, False]
    clock.now += 10.0  # the window has room again
    verdicts = [acquire(limiter, [USER], notice=True) for _ in range(4)]
    assert [v.notice for v in verdicts] == [False, False, True, False]


def test_in_process_another_full_limit_gets_its_own_notice() -> None:
    clock = Clock()
    limiter = InMemoryRateLimiter(clock=clock)
    other = RateLimit(key="flow:user:web:u2", count=2, period=10)
    for _ in range(2):
        acquire(limiter, [GROUP, USER], notice=True)
    assert acquire(limiter, [GROUP, USER], notice=True).notice  # u1 full
    assert acquire(limiter, [GROUP, other], notice=True) == Verdict(wait=0.0)  # group: 3rd
    refused = acquire(limiter, [GROUP, other], notice=True)
    assert refused.wait > 0 and refused.notice  # the group is full now: once for the group
    assert not acquire(limiter, [GROUP, other], notice=True).notice
    assert not acquire(limiter, [GROUP, USER], notice=True).notice


def test_without_notice_nothing_is_marked() -> None:
    clock = Clock()
    limiter = InMemoryRateLimiter(clock=clock)
    results = [acquire(limiter, [USER], notice=False) for _ in range(3)]
    assert [r.notice for r in results] == [False, False, False] and results[2].wait > 0
    assert acquire(limiter, [USER], notice=True).notice  # the mark was still free
    assert acquire(NoRateLimiter(), [USER], notice=True) == Verdict()
    assert acquire(limiter, [], notice=True) == Verdict()


# --- one reply per window: Redis ----------------------------------------------------------


def test_redis_one_notice_per_window_and_the_mark_lives_as_long_as_the_wait(
    redis_client: redis.Redis,
) -> None:
    limiter = RedisRateLimiter(redis_client, prefix="rlr")
    limit = RateLimit(key="flow:user:web:u1", count=2, period=1.5)
    verdicts, marked_at = [], 0.0
    for i in range(5):
        verdicts.append(acquire(limiter, [limit], notice=True))
        if i == 2:
            marked_at = time.monotonic()  # the refusal that set the mark
    assert [v.wait > 0 for v in verdicts] == [False, False, True, True, True]
    assert [v.notice for v in verdicts] == [False, False, True, False, False]
    mark = f"rlr:{REDIS_MARKS}:{limit.key}"
    ttl_ms = redis_client.pttl(mark)
    since_ms = (time.monotonic() - marked_at) * 1000  # the mark's TTL ran down meanwhile
    assert 0 < ttl_ms <= 1500 and verdicts[2].wait * 1000 <= ttl_ms + since_ms + 1
    # the same windows as the delivery limiter's script: its slots count here and back
    assert limiter.try_acquire([limit]) > 0
    time.sleep(1.6)  # the window has room again: the next refusal is the next window's
    assert limiter.try_acquire([limit]) == 0.0
    verdicts = [acquire(limiter, [limit], notice=True) for _ in range(4)]
    assert [v.wait > 0 for v in verdicts] == [False, True, True, True]
    assert [v.notice for v in verdicts] == [False, True, False, False]


def test_redis_without_notice_is_the_plain_limiter(redis_client: redis.Redis) -> None:
    limiter = RedisRateLimiter(redis_client, prefix="rlr")
    limit = RateLimit(key="flow:user:web:u9", count=1, period=30)
    assert acquire(limiter, [limit], notice=False) == Verdict()
    assert acquire(limiter, [limit], notice=False).notice is False
    assert redis_client.keys(f"rlr:{REDIS_MARKS}:*") == []
    assert acquire(limiter, [limit], notice=True).notice


def test_redis_marks_never_share_a_key_with_a_window(redis_client: redis.Redis) -> None:
    limiter = RedisRateLimiter(redis_client, prefix="rlr")
    plain = RateLimit(key="flow:user:web:u1", count=1, period=30)
    odd = RateLimit(key="flow:user:web:u1" + NOTICE_SUFFIX, count=1, period=30)  # a user id
    got = [acquire(limiter, [limit], notice=True) for limit in (plain, odd, plain, odd)]
    # no WRONGTYPE: each has its own window and its own mark
    assert [(v.wait > 0, v.notice) for v in got] == [(False, False)] * 2 + [(True, True)] * 2


def _race(start_at: float, n: int, out: multiprocessing.Queue) -> None:
    client = redis.Redis.from_url(REDIS_URL)
    limiter = RedisRateLimiter(client, prefix="rlr")
    limits = [
        RateLimit(key="flow:user:web:race", count=5, period=60),
        RateLimit(key="flow:channel:web", count=1000, period=60),
    ]
    acquire(limiter, [RateLimit(key="warm-up", count=1000, period=1)], notice=True)
    while time.time() < start_at:
        time.sleep(0.001)
    got = [acquire(limiter, limits, notice=True) for _ in range(n)]
    out.put((sum(v.wait == 0 for v in got), sum(v.notice for v in got)))


def test_two_processes_racing_over_one_limit_get_one_notice(redis_client: redis.Redis) -> None:
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue = ctx.Queue()
    start_at = time.time() + 3.0
    procs = [ctx.Process(target=_race, args=(start_at, 40, out)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
        assert p.exitcode == 0
    assert sum(admitted for admitted, _ in results) == 5  # exact across processes
    assert sum(notices for _, notices in results) == 1  # one reply for the whole window


def test_busy_stale_and_quota_replies_are_off_unless_set() -> None:
    cfg = parse(
        "[conversation_flow]\nbusy_reply = 稍等\nnotice_window_seconds = 30\n"
        "[conversation_flow_qq]\nbusy_reply =\nstale_reply = 刚才没看到\nquota_reply = 明天见\n"
    )
    assert (cfg.default.busy_reply, cfg.default.notice_window_seconds) == ("稍等", 30.0)
    assert cfg.default.stale_reply is None and cfg.default.quota_reply is None
    qq = cfg.for_channel("qq")
    assert (qq.busy_reply, qq.stale_reply, qq.quota_reply) == (None, "刚才没看到", "明天见")
    assert FlowPolicy().busy_reply is None and FlowPolicy().notice_window_seconds == 60
    with pytest.raises(ConfigError) as info:
        parse("[conversation_flow]\nstale_reply = 好的 ; 注释\n")
    assert info.value.field == "conversation_flow.stale_reply"
    with pytest.raises(ConfigError) as info:
        parse("[conversation_flow]\nnotice_window_seconds = 0\n")
    assert info.value.field == "conversation_flow.notice_window_seconds"


def test_claim_notice_is_once_per_window_in_redis_and_in_process(redis_client) -> None:
    clock = Clock()
    local = InMemoryRateLimiter(clock=clock)
    assert claim_notice(local, "flow:reply:busy:s1", 10)
    assert not claim_notice(local, "flow:reply:busy:s1", 10)
    assert claim_notice(local, "flow:reply:busy:s2", 10)  # another scope
    clock.now += 10.5
    assert claim_notice(local, "flow:reply:busy:s1", 10)  # the next window
    shared = RedisRateLimiter(redis_client, prefix="t")
    assert claim_notice(shared, "flow:reply:stale:s1", 10)
    assert not claim_notice(RedisRateLimiter(redis_client, prefix="t"), "flow:reply:stale:s1", 10)
    assert 0 < redis_client.pttl("t:ratelimit-notice:flow:reply:stale:s1") <= 10_000
