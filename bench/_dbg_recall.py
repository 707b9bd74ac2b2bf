import json, sys, tempfile
from datetime import UTC, datetime, timedelta
sys.path.insert(0, "/work/main")
import bench.memory_recall as mr
from nekoflow.memory.retrieve import _retrieve
from nekoflow.memory.lexical import query_terms, scope_token
from nekoflow.memory.round_rank import CONTEXT_WEIGHT
from nekoflow.memory.search import corpus_stats_keys
from nekoflow.memory.settings import MemorySettings
from nekoflow.storage import create_all, make_engine
from sqlmodel import Session
data = json.loads(mr.DATA.read_text(encoding="utf-8"))
with tempfile.TemporaryDirectory(dir="/dev/shm") as tmp:
    engine = make_engine(f"sqlite:///{tmp}/r.db"); create_all(engine)
    rig = mr.Rig(engine)
    asked = mr.question_time(datetime.now(UTC))
    for at, m in mr.schedule(data["facts"], 1100, asked - timedelta(hours=1)):
        rig.say(at, m)
    q = sys.argv[1]
    with Session(engine) as s:
        query = query_terms(q, [], CONTEXT_WEIGHT)
        keys = [scope_token(rig.role_id, rig.scope_id())]
        both = corpus_stats_keys(s, keys, query)
        past, ranked = _retrieve(s, role_id=rig.role_id, scope_id=rig.scope_id(), message=q, context=[], now=asked, settings=MemorySettings(), query_vector=None, embeddings_model=None, summary_budget=MemorySettings().summary_tokens, stats=both[keys[0]], query=query)
        print("query", query)
        for m in ranked[:15]:
            print(round(m.score,3), round(m.relevance,3), round(m.importance,3), round(m.recency,3), m.candidate.kind, m.candidate.content[:90].replace("\n"," "))
