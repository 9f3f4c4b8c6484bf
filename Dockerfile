# The bot as a container (docs/operations.md, "A container"): `docker build -t tomori-cog .`
# Stage one builds the wheel from this checkout; stage two installs it into a slim Python, run
# by a user without rights, with `tomori` (the installed command) as its entry point.
# .ci/wheel runs this file's pip steps in a fresh venv, so a step that breaks fails CI.

FROM python:3.12-slim AS build
COPY . /src
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels /src

FROM python:3.12-slim
# The extras to install with it: a Discord library (nextcord or discordpy), postgres for
# TOMORI_DB_URL, metrics for TOMORI_METRICS_ADDR (the health check asks it), and gemini or mcp
# where the bot uses them.
ARG EXTRAS=nextcord,postgres,metrics
ENV PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    TOMORI_DB_PATH=/data/tomori.db \
    TOMORI_METRICS_ADDR=0.0.0.0:9464
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir "$(echo /wheels/tomori_cog-*.whl)[${EXTRAS}]" && rm -rf /wheels
RUN useradd --create-home --uid 10001 tomori && mkdir /data && chown tomori /data
USER tomori
WORKDIR /home/tomori
VOLUME /data
EXPOSE 9464
# The process answers /healthz where TOMORI_METRICS_ADDR says; the check asks the loopback of
# its family (127.0.0.1 for 0.0.0.0, ::1 for [::]) with Python's own client (slim has no curl).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 CMD ["python", "-m", "tomori.health_check"]
ENTRYPOINT ["tomori"]
