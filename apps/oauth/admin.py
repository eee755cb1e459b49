"""Staff see each user's OAuth grants per client and revoke one: its access and refresh tokens go
(DOT's own admin lists those tokens too), so the client must ask the user again."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from oauth2_provider.models import (
    get_access_token_model,
    get_grant_model,
    get_id_token_model,
    get_refresh_token_model,
)

from apps.oauth.models import OAuthGrant


@admin.register(OAuthGrant)
class OAuthGrantAdmin(admin.ModelAdmin):
    list_display = ("user", "application", "api_token", "created_at")
    list_filter = ("application",)
    search_fields = ("user__username", "application__name", "application__client_id")
    readonly_fields = ("user", "application", "api_token", "created_at")
    actions = ("revoke_tokens",)

    def has_add_permission(self, request: Any) -> bool:
        return False  # a grant is made by the user's consent, never by hand

    @admin.action(description="Revoke the selected grants' access and refresh tokens")
    def revoke_tokens(self, request: Any, queryset: Any) -> None:
        revoked = 0
        for grant in queryset:
            for model in (get_refresh_token_model(), get_access_token_model()):
                revoked += model.objects.filter(user=grant.user, application=grant.application).delete()[0]
        messages.success(request, f"Revoked {revoked} tokens of {queryset.count()} grants.")


# OIDC is off (no ID tokens are issued), and authorization codes live 60 seconds: nothing for staff
# to see or revoke there. Clients (DOT's Application), access and refresh tokens keep DOT's admin.
admin.site.unregister(get_id_token_model())
admin.site.unregister(get_grant_model())
