"""CortexWeb: grounds AI agents in knowledge they can verify."""

from cortexweb.celery import app as celery_app

__all__ = ("celery_app",)
