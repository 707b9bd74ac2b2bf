# The nekoflow image: the library, its Celery app (nekoflow.worker) and the CLI, as an unprivileged
# user. The installed package is all it runs: `celery -A nekoflow.worker …` needs no checkout.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY nekoflow ./nekoflow
# `voice`: SILK encoding for voice replies to the QQ official bot (a small wheel, no ffmpeg).
RUN pip install --no-cache-dir ".[voice]" \
    && useradd --system --uid 10001 --user-group --home-dir /app --no-create-home nekoflow
ENV PYTHONUNBUFFERED=1
USER nekoflow
CMD ["nekoflow", "--help"]
