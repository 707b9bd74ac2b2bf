"""Telegram: Bot API client, sender, webhook route and the long-polling gateway."""
