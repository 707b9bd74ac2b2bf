"""The turn pipeline as plain Python: stage functions, ordering, retries, handles."""
