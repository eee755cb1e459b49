"""The ``degraded`` run status (issue 26): a run that could not reach Wikidata (or reached it only
partly) and answered from stored data was ``succeeded`` or ``failed`` with ``degraded`` set; it now
ends ``degraded``. Existing runs are moved over so lists, filters and counts read alike."""

from django.db import migrations, models


def degraded_runs_forward(apps, schema_editor):
    FactRun = apps.get_model("wikidata", "FactRun")
    FactRun.objects.filter(degraded=True, status__in=["succeeded", "failed"]).update(status="degraded")


def degraded_runs_backward(apps, schema_editor):
    # Before the status, a degraded run with an answer was "succeeded", one without "failed".
    FactRun = apps.get_model("wikidata", "FactRun")
    for run in FactRun.objects.filter(status="degraded").only("pk", "knowledge"):
        answered = bool(run.knowledge) or run.facts.exists()
        FactRun.objects.filter(pk=run.pk).update(status="succeeded" if answered else "failed")


class Migration(migrations.Migration):
    dependencies = [("wikidata", "0004_run_purpose")]

    operations = [
        migrations.AlterField(
            model_name="factrun",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("succeeded", "Succeeded"),
                    ("degraded", "Degraded"),
                    ("failed", "Failed"),
                ],
                default="queued",
                max_length=16,
            ),
        ),
        migrations.RunPython(degraded_runs_forward, degraded_runs_backward, elidable=True),
    ]
