import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('grounding', '0004_review_memory'),
        ('wikidata', '0004_run_purpose'),
    ]

    operations = [
        migrations.AddField(
            model_name='verification',
            name='sources_note',
            field=models.TextField(blank=True, help_text='What asking Wikidata came to, when it was asked.'),
        ),
        migrations.AddField(
            model_name='verification',
            name='degraded',
            field=models.BooleanField(default=False, help_text='A source the verification asked could not be reached.'),
        ),
        migrations.AddField(
            model_name='verification',
            name='degraded_reason',
            field=models.TextField(blank=True, help_text='Why the source could not be reached.'),
        ),
        migrations.AddField(
            model_name='verification',
            name='fact_run',
            field=models.ForeignKey(blank=True, help_text="The fact run made on this verification's behalf.", null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='verifications', to='wikidata.factrun'),
        ),
    ]
