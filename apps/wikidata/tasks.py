"""Celery tasks of the Wikidata app (queue ``wikidata``): thin wrappers over services."""

from celery import shared_task

from apps.wikidata import services


@shared_task(name="wikidata.fact_run_execute", acks_late=True, ignore_result=True)
def fact_run_execute_task(run_id: str) -> None:
    # Retries of upstream calls live inside the service (bounded, recorded on the run), not in Celery;
    # a redelivered task re-runs the steps and rewrites the same facts (idempotent).
    services.fact_run_execute(run_id=run_id)
