"""LLM clients: the ChatModel interface, an OpenAI-compatible client and a scripted model."""
