"""What an OAuth grant is in CortexWeb's permission model."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from oauth2_provider.settings import oauth2_settings

from apps.core.models import ApiToken


class OAuthGrant(models.Model):
    """One user's authorization of one OAuth client, and the ``ApiToken`` it acts as.

    An OAuth access token authenticates as its grant's token (``services.oauth_token_authenticate``),
    narrowed to the scopes the access token carries: so the per-token rate limit, memory ownership
    (memories of user + client, isolated like any token's), ``ToolCall`` recording and events are
    the API token's, with no second permission model. The token's own secret is random and never
    shown: nothing authenticates with it directly.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="oauth_grants")
    application = models.ForeignKey(
        oauth2_settings.APPLICATION_MODEL, on_delete=models.CASCADE, related_name="cortex_grants"
    )
    api_token = models.OneToOneField(ApiToken, on_delete=models.PROTECT, related_name="oauth_grant")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["user", "application"], name="oauth_grant_user_client")
        ]
        verbose_name = "OAuth grant"

    def __str__(self) -> str:
        return f"{self.application.name or self.application.client_id} for {self.user}"
