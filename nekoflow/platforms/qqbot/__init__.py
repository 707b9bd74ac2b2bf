"""The QQ official bot (API v2): signatures, access token, webhook, gateway session, sender."""
