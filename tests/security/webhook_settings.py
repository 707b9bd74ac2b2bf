"""Platform settings the webhook security tests configure (one Feishu app named ``neko``)."""

from __future__ import annotations

from pydantic import SecretStr

from nekoflow.platforms.feishu.settings import FeishuApp, FeishuSettings


def feishu_settings(encrypt_key: str | None = "ek") -> FeishuSettings:
    """One Feishu app ``neko`` (verification token ``vt``), signed with ``encrypt_key`` when
    given, else checked by the token in the body."""
    return FeishuSettings(
        apps=[
            FeishuApp(
                name="neko",
                app_id="cli_1",
                app_secret=SecretStr("x"),
                verification_token=SecretStr("vt"),
                encrypt_key=SecretStr(encrypt_key) if encrypt_key is not None else None,
            )
        ]
    )
