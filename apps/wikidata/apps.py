from django.apps import AppConfig


class WikidataConfig(AppConfig):
    name = "apps.wikidata"
    label = "wikidata"
    verbose_name = "Wikidata facts"

    def ready(self) -> None:
        from apps.wikidata import adapters  # noqa: F401 - registers the native wikidata.* tools
