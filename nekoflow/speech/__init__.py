"""The character's voice: speech providers, the voice plan of a reply, synthesis and its cache.

Pure decisions live in :mod:`nekoflow.speech.plan`; providers (httpx) in
:mod:`nekoflow.speech.openai_speech` and :mod:`nekoflow.speech.gpt_sovits`; SQL (parts, clip
cache, usage) in :mod:`nekoflow.speech.store`; the synthesis stage in
:mod:`nekoflow.turns.speech_synth`. The Celery task is ``nekoflow.worker.speech`` (queue
``speech``).
"""
