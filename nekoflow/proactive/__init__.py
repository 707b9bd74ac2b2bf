"""Proactive messages: the character writes first (greetings, follow-ups after silence, promised
reminders), scheduled in SQL and fired exactly once by the sweep."""
