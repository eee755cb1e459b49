"""A class's neighbourhood as server-rendered SVG geometry (no script, no library, CSP-safe): the
class in the middle, its parents, children and related classes on a circle around it, each edge
labelled (``subClassOf`` points from the subclass to its parent; a relationship from its subject).

Every number the template puts into an attribute is formatted here."""

from __future__ import annotations

import math
from dataclasses import dataclass

from apps.ontology.browse import SUBCLASS_OF, ClassRef, ClassView

WIDTH = 720.0
HEIGHT = 480.0
RADIUS = 180.0
MAX_NEIGHBOURS = 16
LABEL_CHARS = 26
TRIM = 26.0


def _n(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") or "0"


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[: LABEL_CHARS - 1] + "…"


@dataclass(frozen=True)
class Node:
    ref: ClassRef
    kind: str  # centre, parent, child, related
    x: str
    y: str
    label: str

    @property
    def box(self) -> dict[str, str]:
        """The rectangle behind the label (about 7 px a character at the stylesheet's 12 px)."""
        width = 7.0 * len(self.label) + 16
        return {
            "x": _n(float(self.x) - width / 2),
            "y": _n(float(self.y) - 12),
            "width": _n(width),
            "height": "24",
        }


@dataclass(frozen=True)
class Edge:
    label: str
    x1: str
    y1: str
    x2: str
    y2: str
    label_x: str
    label_y: str
    kind: str
    title: str


@dataclass(frozen=True)
class Neighbourhood:
    nodes: list[Node]
    edges: list[Edge]
    omitted: int
    label: str
    width: str = _n(WIDTH)
    height: str = _n(HEIGHT)


def _trimmed(start: tuple[float, float], end: tuple[float, float]) -> tuple[tuple[float, float], ...]:
    """The segment shortened at both ends so that its arrow stops at the boxes' edge."""
    dx, dy = end[0] - start[0], end[1] - start[1]
    length = math.hypot(dx, dy) or 1.0
    gap = min(TRIM, length / 3)
    ux, uy = dx / length, dy / length
    return (start[0] + ux * gap, start[1] + uy * gap), (end[0] - ux * gap, end[1] - uy * gap)


def neighbourhood(view: ClassView) -> Neighbourhood:
    """The radial layout of ``view``'s class and its neighbours (at most ``MAX_NEIGHBOURS``)."""
    centre_ref = ClassRef(view.cls.iri, view.cls.preferred_term, view.cls.local_name)
    # (neighbour, its kind, edge label, edge goes from the centre to the neighbour)
    around: list[tuple[ClassRef, str, str, bool]] = []
    around += [(ref, "parent", SUBCLASS_OF, True) for ref in view.parents]
    around += [(ref, "child", SUBCLASS_OF, False) for ref in view.children]
    around += [(rel.other, "related", rel.kind, rel.outgoing) for rel in view.relations]
    shown, omitted = around[:MAX_NEIGHBOURS], max(0, len(around) - MAX_NEIGHBOURS)
    cx, cy = WIDTH / 2, HEIGHT / 2
    nodes = [Node(centre_ref, "centre", _n(cx), _n(cy), _short(centre_ref.term))]
    edges = []
    placed: dict[str, tuple[float, float]] = {}
    count = len(shown)
    for index, (ref, kind, label, outward) in enumerate(shown):
        if ref.iri in placed:  # the same class twice (a parent it also relates to): one node
            x, y = placed[ref.iri]
        else:
            angle = -math.pi / 2 + 2 * math.pi * index / max(count, 1)
            x, y = cx + RADIUS * 1.5 * math.cos(angle), cy + RADIUS * math.sin(angle)
            placed[ref.iri] = (x, y)
            nodes.append(Node(ref, kind, _n(x), _n(y), _short(ref.term)))
        (x1, y1), (x2, y2) = _trimmed((cx, cy), (x, y)) if outward else _trimmed((x, y), (cx, cy))
        subject, obj = (centre_ref.term, ref.term) if outward else (ref.term, centre_ref.term)
        edges.append(
            Edge(
                label=label,
                x1=_n(x1), y1=_n(y1), x2=_n(x2), y2=_n(y2),
                label_x=_n((x1 + x2) / 2),
                label_y=_n((y1 + y2) / 2 - 4),
                kind="subclass" if label == SUBCLASS_OF else "relation",
                title=f"{subject} {label} {obj}",
            )
        )  # fmt: skip
    described = "; ".join(edge.title for edge in edges) or "no neighbours"
    return Neighbourhood(
        nodes=nodes,
        edges=edges,
        omitted=omitted,
        label=f"Neighbourhood of {centre_ref.term}: {described}",
    )
