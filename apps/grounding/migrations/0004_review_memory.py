import django.db.models.deletion
import pgvector.django.indexes
from django.conf import settings
from django.db import migrations, models

import apps.embeddings.fields


class Migration(migrations.Migration):
    dependencies = [
        ("grounding", "0003_verification_sources_index"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="verification",
            name="reviewed_verdict",
            field=models.CharField(
                blank=True,
                choices=[
                    ("supported", "Supported"),
                    ("contradicted", "Contradicted"),
                    ("unverified", "Unverified"),
                ],
                help_text="The verdict the reviewer gave.",
                max_length=16,
            ),
        ),
        migrations.AddField(
            model_name="verification",
            name="leaning",
            field=models.CharField(blank=True, help_text="supported, contradicted or none.", max_length=16),
        ),
        migrations.AddField(
            model_name="verification",
            name="queue_reason",
            field=models.TextField(blank=True, help_text="Why it waits for review."),
        ),
        migrations.AddIndex(
            model_name="verification",
            index=models.Index(fields=["review_status", "confidence"], name="grounding_review_order"),
        ),
        migrations.CreateModel(
            name="ReviewMemory",
            fields=[
                (
                    "id",
                    models.BigAutoField(
                        auto_created=True, primary_key=True, serialize=False, verbose_name="ID"
                    ),
                ),
                ("claim", models.TextField()),
                (
                    "normalized",
                    models.TextField(db_index=True, help_text="The claim in lower case, words only."),
                ),
                ("embedding", apps.embeddings.fields.EmbeddingField()),
                (
                    "features",
                    models.JSONField(
                        default=dict,
                        help_text="Numbers, names, polarity and modality: a match must have the same.",
                    ),
                ),
                ("domain", models.CharField(blank=True, max_length=64)),
                (
                    "decision",
                    models.CharField(
                        choices=[("approve", "Approve"), ("reject", "Reject"), ("correct", "Correct")],
                        max_length=16,
                    ),
                ),
                (
                    "verdict",
                    models.CharField(
                        choices=[
                            ("supported", "Supported"),
                            ("contradicted", "Contradicted"),
                            ("unverified", "Unverified"),
                        ],
                        max_length=16,
                    ),
                ),
                ("correction", models.TextField(blank=True)),
                ("reviewer_name", models.CharField(blank=True, max_length=150)),
                ("reviewed_at", models.DateTimeField()),
                ("note", models.TextField(blank=True)),
                ("revoked_at", models.DateTimeField(blank=True, null=True)),
                (
                    "reviewer",
                    models.ForeignKey(
                        blank=True,
                        null=True,
                        on_delete=django.db.models.deletion.SET_NULL,
                        related_name="+",
                        to=settings.AUTH_USER_MODEL,
                    ),
                ),
                (
                    "verification",
                    models.OneToOneField(
                        on_delete=django.db.models.deletion.CASCADE,
                        related_name="memory",
                        to="grounding.verification",
                    ),
                ),
            ],
            options={
                "verbose_name": "review memory",
                "verbose_name_plural": "review memory",
                "ordering": ["-reviewed_at", "-id"],
                "indexes": [
                    pgvector.django.indexes.HnswIndex(
                        ef_construction=64,
                        fields=["embedding"],
                        m=16,
                        name="grounding_review_memory_vec",
                        opclasses=["vector_cosine_ops"],
                    )
                ],
            },
        ),
    ]
