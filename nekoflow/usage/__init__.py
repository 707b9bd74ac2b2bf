"""LLM token usage: metering every model call, daily quotas, and cost from a price table."""
