# The image behind docker-compose.yml's web and worker services.
FROM python:3.11-slim-bookworm

ENV PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 DJANGO_SETTINGS_MODULE=config.settings \
    OMP_THREAD_LIMIT=1 MEDIA_ROOT=/data/media STATIC_ROOT=/app/staticfiles
RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr tesseract-ocr-eng \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --create-home --uid 1000 vetted \
 && mkdir -p /data/media && chown vetted /data/media

WORKDIR /app
COPY pyproject.toml manage.py ./
COPY config ./config
COPY core ./core
COPY api ./api
COPY engine ./engine
COPY benchmarks ./benchmarks
COPY documents ./documents
COPY reliability ./reliability
COPY review ./review
COPY integrations ./integrations
COPY templates ./templates
COPY static ./static
COPY demo ./demo
# Editable: settings find templates/ and static/ beside the code in /app.
RUN pip install --no-cache-dir -e ".[datasets]" \
 && python manage.py collectstatic --noinput -v 0

USER vetted
EXPOSE 8000
CMD ["gunicorn", "config.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "3", \
     "--timeout", "120", "--access-logfile", "-"]
