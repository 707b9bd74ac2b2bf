"""A loopback speech server speaking both provider protocols on 127.0.0.1: OpenAI-compatible
``POST /v1/audio/speech`` (JSON ``model``, ``input``, ``voice``, ``response_format``, ``speed``;
bearer key checked) and GPT-SoVITS ``POST /tts`` (JSON ``text``, ``text_lang``,
``ref_audio_path``, ``prompt_text``, ``prompt_lang``, ``media_type``…; 400 JSON on a bad
request). Audio is real wav (16-bit mono PCM) or a small body with the format's magic bytes.

Scripting: ``delay`` (seconds before answering), ``fail_status`` (answer that HTTP status),
``hold()`` (keep the next request until ``release()``, to kill a worker mid-synthesis).
"""

from __future__ import annotations

import io
import json
import math
import struct
import threading
import time
import wave
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-test-speech"


def wav_bytes(seconds: float = 0.3, rate: int = 24000) -> bytes:
    """A real wav file: a short sine tone."""
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


_MAGIC = {"opus": b"OggS\x00\x02OpusHead", "ogg": b"OggS\x00\x02\x01vorbis", "mp3": b"ID3\x04"}


@dataclass
class SpeechState:
    """What the server received and how it answers (guarded by ``lock``)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delay: float = 0.0
    fail_status: int | None = None
    holding: threading.Event | None = None
    arrived: threading.Event = field(default_factory=threading.Event)


class SpeechServer:
    """Runs the loopback speech server in a daemon thread."""

    def __init__(self) -> None:
        self.state = SpeechState()
        state = self.state

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                with state.lock:
                    state.calls.append((self.path, body))
                    hold, delay, fail = state.holding, state.delay, state.fail_status
                state.arrived.set()
                if hold is not None:
                    hold.wait(timeout=60)
                if delay:
                    time.sleep(delay)
                status, ctype, data = _answer(self.path, self.headers, body, fail)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def hold(self) -> threading.Event:
        """Hold every request until :meth:`release`; returns the event set when one arrived."""
        with self.state.lock:
            self.state.holding = threading.Event()
            self.state.arrived = threading.Event()
            return self.state.arrived

    def release(self) -> None:
        """Let held requests go."""
        with self.state.lock:
            event, self.state.holding = self.state.holding, None
        if event is not None:
            event.set()

    def calls(self, path: str | None = None) -> list[dict[str, Any]]:
        """Bodies of the requests received (to ``path``)."""
        with self.state.lock:
            return [b for p, b in self.state.calls if path is None or p == path]

    def close(self) -> None:
        """Stop serving."""
        self.release()
        self.server.shutdown()
        self.server.server_close()


def _json(status: int, body: dict[str, Any]) -> tuple[int, str, bytes]:
    return status, "application/json", json.dumps(body).encode()


def _answer(
    path: str, headers: Any, body: dict[str, Any], fail: int | None
) -> tuple[int, str, bytes]:
    if fail is not None:
        return _json(fail, {"error": {"message": "scripted failure"}})
    if path == "/v1/audio/speech":
        if headers.get("Authorization") != f"Bearer {KEY}":
            return _json(401, {"error": {"message": "bad key"}})
        fmt = body.get("response_format", "mp3")
        if not body.get("input") or not body.get("voice") or not body.get("model"):
            return _json(400, {"error": {"message": "input, voice and model are required"}})
        if fmt == "wav":
            return 200, "audio/wav", wav_bytes()
        if fmt not in _MAGIC:
            return _json(400, {"error": {"message": "bad response_format"}})
        return 200, f"audio/{fmt}", _MAGIC[fmt] + b"\x00" * 64
    if path == "/tts":
        needed = ("text", "text_lang", "ref_audio_path", "prompt_lang")
        if any(not body.get(k) for k in needed):
            return _json(400, {"message": "tts failed", "Exception": "missing field"})
        fmt = body.get("media_type", "wav")
        if fmt == "wav":
            return 200, "audio/wav", wav_bytes(rate=32000)
        if fmt == "ogg":
            return 200, "audio/ogg", _MAGIC["ogg"] + b"\x00" * 64
        return _json(400, {"message": f"media_type {fmt} is not supported"})
    return _json(404, {"detail": "Not Found"})
