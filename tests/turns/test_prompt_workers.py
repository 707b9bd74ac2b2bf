"""A card's prompt through real Celery workers: what the model server actually receives (a
loopback OpenAI-compatible server records the requests) has macros rendered, the greeting first,
example dialogue, the character's note at its depth and the post-history instructions last."""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from nekoflow.characters import card_document, import_card_report
from nekoflow.turns.stages import llm_messages
from tasks import enqueue_turn
from tests.corpus import corpus_file

from .llm_server import FakeLLM, completion


def seraphina_with_every_field() -> bytes:
    """SillyTavern's Seraphina card (corpus) plus the V2 prompt fields it leaves empty."""
    doc = copy.deepcopy(dict(card_document(corpus_file("st_default_Seraphina.png").read_bytes())))
    doc["data"].update(
        mes_example="<START>\n{{user}}: Where am I?\n{{char}}: *smiles* In my glade, {{user}}.",
        system_prompt="{{original}} Stay in character as {{char}}.",
        post_history_instructions="Write {{char}}'s next reply only; never speak for {{user}}.",
        extensions={
            **doc["data"]["extensions"],
            "depth_prompt": {"prompt": "{{char}} worries about {{user}}.", "depth": 1},
        },
    )
    return json.dumps(doc, ensure_ascii=False).encode()


def web_event(text: str, message_id: str) -> dict[str, Any]:
    return {
        "session_id": "glade",
        "message": text,
        "user_id": "u1",
        "display_name": "Lyra",
        "message_id": message_id,
        "character_id": "Seraphina",
    }


def test_card_prompt_reaches_the_model_through_real_workers(live, workers) -> None:
    import_card_report(live.engine, seraphina_with_every_field())
    with FakeLLM(lambda body, n: (200, completion("*nods* Rest now."), {}, 0.0)) as llm:
        workers.start(extra_env=llm.env())
        first = enqueue_turn("web", web_event("What happened?", "m1"))
        first.wait(timeout=60)
        assert first.status() == "done", workers.logs()
        second = enqueue_turn("web", web_event("Thank you.", "m2"))
        second.wait(timeout=60)
        assert second.status() == "done", workers.logs()
        calls = list(llm.calls)
    sent = calls[-1]["messages"]
    assert sent == llm_messages(live, second.turn_id)  # what the worker sent is what we inspect
    text = json.dumps(sent, ensure_ascii=False)
    assert not re.search(r"\{\{\s*(char|user)\s*\}\}|<USER>|<BOT>", text, re.I)
    system = sent[0]["content"]
    assert system.startswith("你是Seraphina。 Stay in character as Seraphina.")
    assert "[Example Chat]\nLyra: Where am I?\nSeraphina: *smiles* In my glade, Lyra." in system
    assert "Seraphina's Personality" in system  # the description
    assert sent[1]["role"] == "assistant" and sent[1]["content"].startswith(
        "*You wake with a start"
    )
    assert [m["role"] for m in sent[2:]] == ["user", "assistant", "system", "user", "system"]
    assert sent[-3] == {"role": "system", "content": "Seraphina worries about Lyra."}
    assert sent[-2] == {"role": "user", "content": "Thank you."}
    assert sent[-1] == {
        "role": "system",
        "content": "Write Seraphina's next reply only; never speak for Lyra.",
    }
