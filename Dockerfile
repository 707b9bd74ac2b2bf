# The nekoflow image: the library, the Celery tasks and the CLI, run as an unprivileged user.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md celeryconfig.py ./
COPY nekoflow ./nekoflow
COPY tasks ./tasks
# `voice`: SILK encoding for voice replies to the QQ official bot (a small wheel, no ffmpeg).
RUN pip install --no-cache-dir ".[voice]" \
    && useradd --system --uid 10001 --user-group --home-dir /app --no-create-home nekoflow
ENV PYTHONUNBUFFERED=1
USER nekoflow
CMD ["nekoflow", "--help"]
