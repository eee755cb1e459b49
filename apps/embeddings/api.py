"""``POST /v1/embeddings``: the service's own 384-d sentence embeddings, for agents that
want to compare their text with what CortexWeb stores (same model, same space)."""

from django.http import HttpRequest
from ninja import Router

from apps.core.auth import read_token
from apps.core.errors import ValidationFailed
from apps.embeddings.schemas import MAX_TEXT_CHARS, EmbeddingsIn, EmbeddingsOut
from apps.embeddings.services import embed_texts, get_backend

router = Router(tags=["embeddings"])


@router.post("", response=EmbeddingsOut, auth=read_token, summary="Embed 1–64 texts")
def create_embeddings(request: HttpRequest, payload: EmbeddingsIn) -> dict:
    too_long = [index for index, text in enumerate(payload.input) if len(text) > MAX_TEXT_CHARS]
    blank = [index for index, text in enumerate(payload.input) if not text.strip()]
    if too_long or blank:
        raise ValidationFailed(
            f"Each input must be non-blank text of at most {MAX_TEXT_CHARS} characters.",
            details={"tooLong": too_long, "blank": blank},
        )
    vectors = embed_texts(texts=payload.input)
    return {
        "model": get_backend().model_name,
        "dimension": int(vectors.shape[1]),
        "data": [{"index": index, "embedding": vector.tolist()} for index, vector in enumerate(vectors)],
    }
