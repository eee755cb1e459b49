from django.apps import AppConfig


class ArxivConfig(AppConfig):
    name = "apps.arxiv"
    label = "arxiv"
    verbose_name = "arXiv"

    def ready(self) -> None:
        from apps.arxiv import adapters  # noqa: F401 - registers the native arxiv.search tool
