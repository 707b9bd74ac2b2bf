"""GET /api/usage: grouped tokens and cost from the usage ledger, behind the bearer token."""

from __future__ import annotations

from sqlmodel import Session

from nekoflow.storage.usage import LLMUsage
from nekoflow.usage.store import today


def test_usage_is_grouped_priced_and_needs_the_token(client, auth, engine) -> None:
    with Session(engine) as s:
        for kind, model, p, c in [
            ("reply", "gpt-4o-mini", 1000, 200),
            ("review", "gpt-4o-mini", 500, 100),
            ("reply", "local-llama", 10, 5),
        ]:
            s.add(
                LLMUsage(
                    day=today(),
                    kind=kind,
                    model=model,
                    channel="qq",
                    scope_id="qq:group:1",
                    prompt_tokens=p,
                    completion_tokens=c,
                )
            )
        s.commit()
    assert client.get("/api/usage").status_code == 401
    rows = client.get("/api/usage", params={"by": "kind"}, headers=auth).json()
    assert {r["group"]: r["total_tokens"] for r in rows} == {"reply": 1215, "review": 600}
    by_model = client.get("/api/usage", params={"by": "model"}, headers=auth).json()
    assert {r["group"]: r["calls"] for r in by_model} == {"gpt-4o-mini": 2, "local-llama": 1}
    bad = client.get("/api/usage", params={"by": "colour"}, headers=auth)
    assert bad.status_code == 422 and "by" in bad.text
