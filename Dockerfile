# Diwaniya service image. Build: docker build -t diwaniya .
FROM python:3.11-slim AS build
WORKDIR /src
RUN pip install --no-cache-dir --upgrade pip build
COPY pyproject.toml README.md LICENSE NOTICE ./
# The client distribution (the diwaniya namespace) is built first: the
# server's wheel requires diwaniya-client at the same version.
COPY client client
RUN python -m build --wheel --outdir /wheels client
COPY service service
COPY majlis majlis
COPY nlp nlp
COPY memory memory
RUN python -m build --wheel --outdir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 \
    DIWANIYA_LISTEN=0.0.0.0:50051 DIWANIYA_DATA_DIR=/var/lib/diwaniya
RUN useradd --system --uid 10001 --home /var/lib/diwaniya diwaniya \
 && mkdir -p /var/lib/diwaniya && chown diwaniya /var/lib/diwaniya
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir --find-links /wheels /wheels/*.whl && rm -rf /wheels
USER 10001
EXPOSE 50051
# SIGTERM → health NOT_SERVING → drain open streams for DIWANIYA_DRAIN_GRACE_S.
STOPSIGNAL SIGTERM
ENTRYPOINT ["diwaniya"]
CMD ["serve"]
