# The nekoflow image: the library, the Celery tasks and the CLI.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md celeryconfig.py ./
COPY nekoflow ./nekoflow
COPY tasks ./tasks
RUN pip install --no-cache-dir .
ENV PYTHONUNBUFFERED=1
CMD ["nekoflow", "--help"]
