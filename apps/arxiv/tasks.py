"""Celery tasks of the arXiv app (queue ``arxiv``): thin wrappers over services."""

from celery import shared_task

from apps.arxiv import services


@shared_task(name="arxiv.search_run_execute", acks_late=True, ignore_result=True)
def search_run_execute_task(run_id: str) -> None:
    # Retries live inside the service (bounded, rate-limited, recorded on the run), not in Celery.
    services.search_run_execute(run_id=run_id)
