"""The ``degraded`` run status (issue 26): a search answered from the stored papers while arXiv was
down was ``failed`` with ``result.degraded``; it now ends ``degraded``. Existing runs are moved over."""

from django.db import migrations, models


def degraded_runs_forward(apps, schema_editor):
    SearchRun = apps.get_model("arxiv", "SearchRun")
    SearchRun.objects.filter(status="failed", result__degraded=True).update(status="degraded")


def degraded_runs_backward(apps, schema_editor):
    SearchRun = apps.get_model("arxiv", "SearchRun")
    SearchRun.objects.filter(status="degraded").update(status="failed")


class Migration(migrations.Migration):
    dependencies = [("arxiv", "0002_run_lifecycle_fields")]

    operations = [
        migrations.AlterField(
            model_name="searchrun",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("succeeded", "Succeeded"),
                    ("degraded", "Degraded"),
                    ("failed", "Failed"),
                    ("rate_limited", "Rate limited"),
                ],
                default="queued",
                max_length=16,
            ),
        ),
        migrations.RunPython(degraded_runs_forward, degraded_runs_backward, elidable=True),
    ]
