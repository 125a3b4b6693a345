# Diwaniya service image. Build: docker build -t diwaniya .
# Lint: hadolint Dockerfile (tests/test_deploy.py runs it, so CI does).

# --- build: the wheel, installed with its dependencies into /opt/diwaniya ---
FROM python:3.11-slim AS build
WORKDIR /src
# Build tools pinned (hadolint DL3013): the same inputs build the same wheel.
RUN pip install --no-cache-dir pip==26.3 build==1.6.1
# constraints.txt: the dependency versions CI tested (make lock), taken here too.
COPY pyproject.toml README.md LICENSE NOTICE constraints.txt ./
# The client distribution (the diwaniya namespace) is built first: the
# server's wheel requires diwaniya-client at the same version.
COPY client client
RUN python -m build --wheel --outdir /wheels client
COPY service service
COPY majlis majlis
COPY nlp nlp
COPY memory memory
# A virtualenv on the same base image as the runtime stage, so it is copied
# whole and the runtime image needs neither pip nor a build step.
RUN python -m build --wheel --outdir /wheels . \
 && python -m venv /opt/diwaniya \
 && /opt/diwaniya/bin/pip install --no-cache-dir -c constraints.txt --find-links /wheels /wheels/*.whl

# --- runtime: non-root, read-only-root friendly --------------------------
FROM python:3.11-slim
LABEL org.opencontainers.image.title="diwaniya" \
      org.opencontainers.image.description="Arabic-native conversational microservice over gRPC" \
      org.opencontainers.image.licenses="Apache-2.0"
# 0.0.0.0 in a container: the service then refuses to start without API keys
# (DIWANIYA_API_KEYS_FILE) unless DIWANIYA_ALLOW_ANONYMOUS=true says otherwise.
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    PATH=/opt/diwaniya/bin:$PATH \
    DIWANIYA_LISTEN=0.0.0.0:50051 DIWANIYA_METRICS_LISTEN=0.0.0.0:9464 \
    DIWANIYA_DATA_DIR=/var/lib/diwaniya
# A fixed uid/gid (10001) so Kubernetes' runAsUser/fsGroup and runAsNonRoot
# can check it without reading /etc/passwd.
RUN groupadd --system --gid 10001 diwaniya \
 && useradd --system --uid 10001 --gid 10001 --no-create-home --home-dir /var/lib/diwaniya \
      --shell /usr/sbin/nologin diwaniya \
 && mkdir -p /var/lib/diwaniya && chown 10001:10001 /var/lib/diwaniya
COPY --from=build /opt/diwaniya /opt/diwaniya
USER 10001:10001
WORKDIR /var/lib/diwaniya
# 50051 gRPC (API, health, reflection when enabled); 9464 Prometheus /metrics.
EXPOSE 50051 9464
# SIGTERM → health NOT_SERVING → drain open streams for DIWANIYA_DRAIN_GRACE_S.
STOPSIGNAL SIGTERM
ENTRYPOINT ["diwaniya"]
CMD ["serve"]
