from django.apps import AppConfig


class EmbeddingsConfig(AppConfig):
    name = "apps.embeddings"
    label = "embeddings"
    verbose_name = "Embeddings"
