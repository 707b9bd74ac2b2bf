"""Channel errors: a platform event that cannot be parsed names the offending field."""

from __future__ import annotations

from nekoflow.errors import InputError


class MalformedEventError(InputError):
    """A raw platform event is not the shape its adapter expects.

    ``channel`` is the adapter's channel name; ``field`` the dotted path of the bad field
    (e.g. ``message.chat.id``).
    """

    def __init__(self, channel: str, field: str, problem: str) -> None:
        super().__init__(f"{channel} event: field {field!r} {problem}", field=field)
        self.channel = channel
