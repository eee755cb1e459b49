"""``manage.py security_docs [--check]``: regenerate the permission tables of ``docs/security.md``.

The section between the markers comes from ``apps.core.security`` (the table the permission-matrix
test checks against the running code); the prose around it is left as written. ``--check`` writes
nothing and fails when the page is out of date.
"""

from pathlib import Path

from django.conf import settings

from apps.core.generated_docs import GeneratedDocsCommand
from apps.core.security import security_docs_render


class Command(GeneratedDocsCommand):
    help = "Write the generated permission tables of docs/security.md (--check: only compare)."
    page = Path(settings.BASE_DIR) / "docs" / "security.md"
    source = "apps/core/security.py"
    render = staticmethod(security_docs_render)
