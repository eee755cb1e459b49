from ninja import Field, Schema

from apps.core.schemas import StrictSchema

MAX_TEXTS_PER_REQUEST = 64
MAX_TEXT_CHARS = 8192


class EmbeddingsIn(StrictSchema):
    input: list[str] = Field(
        ..., min_length=1, max_length=MAX_TEXTS_PER_REQUEST, description="Texts to embed, 1–64 per request."
    )


class EmbeddingOut(Schema):
    index: int
    embedding: list[float]


class EmbeddingsOut(Schema):
    model: str
    dimension: int
    data: list[EmbeddingOut]
