"""Admin: API tokens (created and revoked through the services) and the event log."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from apps.core.admin_mixins import json_display
from apps.core.errors import ValidationFailed
from apps.core.models import ApiToken, Event, TokenScope
from apps.core.services import api_token_create, api_token_expiry_check, api_token_revoke, api_token_rotate


class ApiTokenCreationForm(forms.ModelForm):
    scopes = forms.MultipleChoiceField(
        choices=TokenScope.choices,
        widget=forms.CheckboxSelectMultiple,
        initial=[TokenScope.READ],
        # Each choice's label already says what the scope allows (apps/core/scopes.py, the one table);
        # listing the scopes again here is how this text once left out `write`.
        help_text="Only what the agent needs. docs/security.md lists what each operation needs.",
    )

    class Meta:
        model = ApiToken
        fields = ["name", "scopes", "expires_at"]

    def clean_expires_at(self) -> Any:
        # The service's rule, checked here so the admin shows it on the field: an error raised in
        # save_model, after validation, would be a 500.
        expires_at = self.cleaned_data.get("expires_at")
        try:
            api_token_expiry_check(expires_at=expires_at)
        except ValidationFailed as error:
            raise forms.ValidationError(error.message) from error
        return expires_at


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = [
        "name", "prefix", "scopes", "state", "created_at", "expires_at", "last_used_at", "revoked_at"
    ]  # fmt: skip
    list_filter = ["revoked_at", "expires_at"]
    search_fields = ["name", "prefix"]
    list_select_related = ["created_by"]
    readonly_fields = ["prefix", "created_at", "created_by", "last_used_at", "revoked_at"]
    actions = ["revoke_tokens", "rotate_tokens"]

    @admin.display(description="state")
    def state(self, token: ApiToken) -> str:
        """Active, or why not — a warning, not a quiet date in a column at the right edge."""
        if token.is_active:
            return format_html('<span class="flag-quiet">{}</span>', "active")
        return format_html(
            '<span class="flag-warning">{}</span>', "revoked" if token.revoked_at is not None else "expired"
        )

    def get_form(
        self, request: HttpRequest, obj: ApiToken | None = None, **kwargs: Any
    ) -> type[forms.ModelForm]:
        if obj is None:
            kwargs["form"] = ApiTokenCreationForm
        return super().get_form(request, obj, **kwargs)

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> list[str]:
        if obj is None:
            return []
        # A token's power is fixed at creation: revoke and create a new one to change it.
        return [*self.readonly_fields, "scopes", "expires_at"]

    def save_model(self, request: HttpRequest, obj: ApiToken, form: forms.ModelForm, change: bool) -> None:
        if change:
            obj.save(update_fields=["name"])
            return
        # The form checked what the service refuses (clean_expires_at, the scope choices).
        token, raw_token = api_token_create(
            name=form.cleaned_data["name"],
            scopes=form.cleaned_data["scopes"],
            expires_at=form.cleaned_data.get("expires_at"),
            created_by=request.user,
        )
        obj.pk = token.pk
        obj.refresh_from_db()
        self.message_user(
            request,
            f"Token created. Copy it now, it will not be shown again: {raw_token}",
            level=messages.WARNING,
        )

    @admin.action(description="Revoke selected tokens")
    def revoke_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            api_token_revoke(token_id=token.pk)
        self.message_user(request, f"Revoked {queryset.count()} token(s).")

    @admin.action(description="Rotate selected tokens (the replacement keeps their memories)")
    def rotate_tokens(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        for token in queryset:
            try:
                new, raw_token = api_token_rotate(token_id=token.pk, created_by=request.user)
            except ValidationFailed as error:
                self.message_user(request, error.message, level=messages.ERROR)
                continue
            self.message_user(
                request,
                f"{token} rotated: {token.prefix}… is revoked; its replacement {new.prefix}… owns what it "
                f"owned. Copy the new token now, it will not be shown again: {raw_token}",
                level=messages.WARNING,
            )


@admin.register(Event)
class EventAdmin(admin.ModelAdmin):
    list_display = ["name", "correlation_id", "created_at"]
    list_filter = ["name"]
    search_fields = ["name", "correlation_id"]
    date_hierarchy = "created_at"
    exclude = ["payload"]
    readonly_fields = ["payload_json"]  # the payload as a formatted block, not one line of JSON
    payload_json = json_display("payload", "payload")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Event | None = None) -> bool:
        return False
