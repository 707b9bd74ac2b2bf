"""Benchmark: the worker CPU a voiced reply adds, and the clip cache's hit rate.

Replies of two to three lines are voiced in process through the real synthesis stage
(``nekoflow.turns.speech_synth.synthesize_turn``: plan, cache look-up, provider call, store)
against a loopback OpenAI-compatible speech server running in another process (its CPU is not
counted), on PostgreSQL (or SQLite). A share of the spoken lines (``--repeat``, default 30 %) are
one of 40 catchphrases, as a character repeats itself; the rest are new lines (misses). For each
reply the benchmark also runs what the deliver stage adds for its voice rows (plan the voice
chunks, load each clip, build the OneBot ``record`` segment). QQ's official bot additionally needs
SILK: the CPU of encoding one line's wav is measured separately.

Prints the cache hit rate and the worker CPU per voiced reply (process time, milliseconds):
synthesis (misses and hits apart), delivery, and SILK encoding per line.

    python bench/voice.py                        # 300 replies on the default PostgreSQL
    python bench/voice.py --replies 1000 --db-url sqlite:///voice-bench.db
"""

from __future__ import annotations

import argparse
import io
import json
import math
import multiprocessing
import os
import platform
import random
import statistics
import struct
import time
import uuid
import wave
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DEFAULT_DB_URL = os.environ.get(
    "NEKOFLOW_BENCH_PG_URL", "postgresql://postgres@127.0.0.1:5432/test"
)
CATCHPHRASES = [f"口癖その{i}、にゃ~" for i in range(40)]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--replies", type=int, default=300, help="voiced replies")
    p.add_argument("--db-url", default=DEFAULT_DB_URL, help="database (a bench schema on PG)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--repeat", type=float, default=0.3, help="share of lines that are catchphrases")
    return p.parse_args()


def _wav(seconds: float = 2.0, rate: int = 24000) -> bytes:
    frames = b"".join(
        struct.pack("<h", int(6000 * math.sin(i / 8))) for i in range(int(seconds * rate))
    )
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(frames)
    return out.getvalue()


def _serve(port_queue: multiprocessing.Queue) -> None:
    """The loopback speech server (another process): ~20 KB of mp3-looking audio per line."""
    audio = b"ID3\x04" + os.urandom(20_000)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self.send_response(200)
            self.send_header("Content-Type", "audio/mpeg")
            self.send_header("Content-Length", str(len(audio)))
            self.end_headers()
            self.wfile.write(audio)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port_queue.put(server.server_address[1])
    server.serve_forever()


def _engine(url: str):  # type: ignore[no-untyped-def]
    from nekoflow.storage import create_all, make_engine

    if url.startswith("postgresql"):
        admin = make_engine(url)
        with admin.begin() as conn:
            conn.exec_driver_sql("DROP SCHEMA IF EXISTS bench_voice CASCADE")
            conn.exec_driver_sql("CREATE SCHEMA bench_voice")
        admin.dispose()
        sep = "&" if "?" in url else "?"
        url = f"{url}{sep}options=-csearch_path%3Dbench_voice"
    engine = make_engine(url)
    create_all(engine)
    return engine


def _reply(engine, role_id: int, rng: random.Random, repeat: float) -> str:  # type: ignore[no-untyped-def]
    """A finished Web turn with 2–3 assistant lines whose spoken parts repeat catchphrases."""
    from sqlmodel import Session

    from nekoflow.storage.dialogue import Line, Save
    from nekoflow.storage.turns import TurnRun

    turn_id = uuid.uuid4().hex
    with Session(engine) as s:
        save = Save(role_id=role_id, scope_id=f"web:{turn_id}")
        s.add(save)
        s.commit()
        s.add(
            TurnRun(
                turn_id=turn_id,
                channel="web",
                scope_id=save.scope_id,
                status="done",
                role_id=role_id,
                save_id=save.id,
                request={"conversation_id": turn_id},
            )
        )
        for _ in range(rng.choice((2, 3))):
            if rng.random() < repeat:
                phrase = rng.choice(CATCHPHRASES)
            else:
                phrase = f"新しい台詞 {uuid.uuid4().hex[:12]}"
            s.add(
                Line(
                    content="【开心】……",
                    tts_content=phrase,
                    attribute="assistant",
                    save_id=save.id,
                    turn_id=turn_id,
                    role_id=role_id,
                )
            )
        s.commit()
    return turn_id


def main() -> None:
    args = parse_args()
    from sqlmodel import Session

    from nekoflow.delivery.base import Destination
    from nekoflow.platforms.onebot.protocol import send_msg
    from nekoflow.settings import Settings
    from nekoflow.speech.convert import wav_to_silk
    from nekoflow.speech.settings import SpeechSettings
    from nekoflow.storage.dialogue import Role
    from nekoflow.turns import store as turn_store
    from nekoflow.turns.speech_synth import SpeechDeps, synthesize_turn
    from nekoflow.turns.voice_outbox import loaded, step_of, voice_chunks

    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=_serve, args=(ports,), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{ports.get(timeout=10)}/v1"
    engine = _engine(args.db_url)
    with Session(engine) as s:
        role = Role.new("钦灵")
        s.add(role)
        s.commit()
        role_id = role.id
    speech = SpeechSettings(enabled=True, openai_base_url=url, openai_api_key="bench")
    deps = SpeechDeps(engine=engine, config_path="absent-config.ini", speech=speech)
    settings = Settings(database_url=args.db_url, runtime_config_path="absent-config.ini")
    dest = Destination(platform="onebot", bot="1", chat_type="private", chat_id="42")
    rng = random.Random(args.seed)
    miss_cpu, hit_cpu, deliver_cpu, both = [], [], [], []
    made = cached = 0
    for _ in range(args.replies):
        turn_id = _reply(engine, role_id, rng, args.repeat)
        start = time.process_time()
        out = synthesize_turn(deps, turn_id)
        spent = (time.process_time() - start) * 1000
        (hit_cpu if out.synthesized == 0 else miss_cpu).append(spent)
        made, cached = made + out.synthesized, cached + out.cached
        run = turn_store.get_run(engine, turn_id)
        assert run is not None
        start = time.process_time()
        for chunk in voice_chunks(engine, settings, run, 1, speech):
            step = step_of(engine, turn_id, chunk.payload, run.created_at, run.created_at, speech)
            full = loaded(engine, turn_id, chunk)
            assert step.kind == "send" and full is not None
            send_msg(dest, full)
        deliver_cpu.append((time.process_time() - start) * 1000)
        both.append(spent + deliver_cpu[-1])
    wav = _wav()
    start = time.process_time()
    for _ in range(10):
        wav_to_silk(wav)
    silk_ms = (time.process_time() - start) * 100
    server.terminate()
    total = made + cached

    def ms(values: list[float]) -> str:
        if not values:
            return "—"
        return f"p50 {statistics.median(values):.2f} ms, mean {statistics.fmean(values):.2f} ms"

    print(
        f"voice bench: {args.replies} replies, {total} voiced lines, {engine.dialect.name}, "
        f"{platform.python_version()}, {os.cpu_count()} cpu(s)"
    )
    print(f"cache hit rate: {cached / total:.1%} ({cached} of {total} lines from the cache)")
    print(f"synthesis CPU per reply with a miss: {ms(miss_cpu)} ({len(miss_cpu)} replies)")
    print(f"synthesis CPU per reply, all hits:   {ms(hit_cpu)} ({len(hit_cpu)} replies)")
    print(f"delivery CPU per voiced reply:       {ms(deliver_cpu)}")
    print(f"added worker CPU per voiced reply:   {ms(both)}")
    print(f"SILK encoding (QQ bot) per 2 s line: {silk_ms:.2f} ms")
    print(
        json.dumps(
            {"hit_rate": round(cached / total, 4), "cpu_ms_p50": round(statistics.median(both), 3)}
        )
    )


if __name__ == "__main__":
    main()
