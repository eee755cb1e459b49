"""``/ontology-agent/``: the seven ontology tools of seed 003 (VisionClaw's contracts: camelCase
requests, snake_case responses). Reads are anonymous; ``propose`` needs a token."""

from __future__ import annotations

from ninja import Router

router = Router(tags=["ontology"])
