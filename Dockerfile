# syntax=docker/dockerfile:1
# One image for every worker role; docker-compose.yml runs it once per role:
#   docker run --rm quantdesk:local worker --role llm-offline
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    QUANTDESK_DATA_DIR=/data

WORKDIR /src
COPY . .
# The postgres extra is the driver of the compose stack's PostgreSQL app database; the
# console extra serves `quantdesk console` (the compose profile "console"); the mcp extra
# serves `quantdesk mcp` from the same image (`docker run -i <image> mcp`).
RUN --mount=type=cache,target=/root/.cache/pip \
    pip install ".[postgres,console,mcp]"

RUN useradd --create-home --uid 10001 quantdesk && install -d -o quantdesk /data
USER quantdesk
WORKDIR /data

ENTRYPOINT ["quantdesk"]
CMD ["worker", "--role", "workflows"]
