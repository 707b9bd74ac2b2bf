"""Chat platform integrations (clients, gateways, senders); each registers its delivery parts in
``nekoflow.platforms.<name>.delivery`` (see ``nekoflow.delivery.registry``)."""
