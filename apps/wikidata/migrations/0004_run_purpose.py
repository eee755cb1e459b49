from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('wikidata', '0003_run_lifecycle'),
    ]

    operations = [
        migrations.AddField(
            model_name='factrun',
            name='purpose',
            field=models.CharField(choices=[('question', 'Question'), ('verification', "On a verification's behalf")], default='question', help_text='A question asked, or a claim checked on a grounding verification\'s behalf.', max_length=16),
        ),
    ]
