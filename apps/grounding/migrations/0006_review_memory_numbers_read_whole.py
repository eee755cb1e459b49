"""Remembered claims' features read again: numbers in words are read whole ("five hundred" is 500, it
was 5 and 100), so a review of "500 residents" now applies to "five hundred residents" too.

Features are derived from the claim's text by the current reader, so this runs the current reader
(``review_memory.features_refresh``) on the historical model; a later change to the reader adds a
migration of its own.
"""

from django.db import migrations


def refresh(apps, schema_editor):
    from apps.grounding import review_memory

    review_memory.features_refresh(apps.get_model("grounding", "ReviewMemory"))


class Migration(migrations.Migration):
    dependencies = [("grounding", "0005_verification_sources_degraded")]

    operations = [migrations.RunPython(refresh, migrations.RunPython.noop)]
