"""The Celery app: configured from Django settings (``CELERY_*``), tasks autodiscovered."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "cortexweb.settings")

app = Celery("cortexweb")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
