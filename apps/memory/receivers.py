"""Signal receivers of the memory app."""

from __future__ import annotations

from typing import Any

from apps.core.models import ApiToken
from apps.memory.services import memories_move


def memories_follow_rotated_token(*, old: ApiToken, new: ApiToken, **kwargs: Any) -> None:
    """A rotated token's memories belong to its replacement (inside the rotation's transaction)."""
    memories_move(from_token=old, to_token=new)
