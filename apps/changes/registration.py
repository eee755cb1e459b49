"""What the change log records (django-auditlog's registry) and the receivers of change sets.

Operator-written fields are named one by one (``include_fields``) rather than excluded, so a field
added to a model later — a secret, a health counter, a sync timestamp — stays out of the log until
someone decides it belongs there. Django's own timestamps are left out: each entry has its own.
"""

from __future__ import annotations

from typing import Any

from auditlog.models import LogEntry
from auditlog.registry import auditlog
from auditlog.signals import pre_log
from django.db.models import Model
from django.db.models.signals import post_save, pre_delete, pre_save

from apps.changes import services

# Reviews and merges are decisions taken on rows agents create by the thousand (verifications,
# proposals): only the decision is a change an operator made, so creating and deleting them is not
# logged — only updates of the decision's fields.
UPDATES_ONLY: set[type[Model]] = set()


def register() -> None:
    from apps.connectors import services as connector_services
    from apps.connectors.models import Connector, RemoteTool, ToolAlias
    from apps.core.models import ApiToken
    from apps.grounding.models import GroundingSettings, Verification
    from apps.knowledge.models import KnowledgeEntry
    from apps.memory.models import MemorySettings
    from apps.ontology.models import OntologyProposal

    auditlog.register(Connector, include_fields=list(connector_services.CONNECTOR_WRITABLE_FIELDS))
    # The tool's aliases are logged as its "aliases" field by the change set (apps.changes.services).
    auditlog.register(RemoteTool, include_fields=list(connector_services.TOOL_WRITABLE_FIELDS))
    # Never the token's hash or prefix (both are derived from the secret), nor last use (every call).
    auditlog.register(ApiToken, include_fields=["name", "scopes", "expires_at", "revoked_at", "created_by"])
    auditlog.register(
        KnowledgeEntry,
        include_fields=[
            "entry_id", "domain", "knowledge_source", "topic", "content", "source", "url",
            "related", "tags", "confidence", "last_verified",
        ],
    )  # fmt: skip
    auditlog.register(GroundingSettings, exclude_fields=["id", "updated_at"])
    auditlog.register(MemorySettings, exclude_fields=["id", "updated_at"])
    auditlog.register(
        OntologyProposal,
        include_fields=["status", "merged_version", "reviewed_by", "reviewed_at", "review_note"],
    )
    auditlog.register(
        Verification,
        include_fields=[
            "review_status", "reviewed_verdict", "reviewer", "reviewed_at", "review_note",
            "correction", "corrected_entry",
        ],
    )  # fmt: skip
    UPDATES_ONLY.update({OntologyProposal, Verification})

    pre_log.connect(_decisions_only, dispatch_uid="changes.decisions_only")
    pre_save.connect(services.log_entry_stamped, sender=LogEntry, dispatch_uid="changes.stamped")
    pre_save.connect(services.alias_touched, sender=ToolAlias, dispatch_uid="changes.alias_saved")
    pre_delete.connect(services.alias_touched, sender=ToolAlias, dispatch_uid="changes.alias_deleted")
    pre_save.connect(services.tool_touched, sender=RemoteTool, dispatch_uid="changes.tool_saved")
    post_save.connect(services.tool_created, sender=RemoteTool, dispatch_uid="changes.tool_created")


def _decisions_only(sender: type, instance: Model, action: int, **kwargs: Any) -> bool:
    """``pre_log``: False skips the entry."""
    return sender not in UPDATES_ONLY or action == LogEntry.Action.UPDATE
