"""DRF serializer of stored arXiv papers (``/api/papers/``)."""

from rest_framework import serializers

from apps.arxiv.models import Paper


class PaperSerializer(serializers.ModelSerializer):
    class Meta:
        model = Paper
        fields = [
            "arxiv_id", "latest_version", "title", "summary", "authors", "author_details", "published",
            "updated", "url", "pdf_url", "categories", "primary_category", "doi", "journal_ref", "comment",
            "first_seen_at", "last_seen_at",
        ]  # fmt: skip
