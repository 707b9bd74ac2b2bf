"""Conversation flow: what happens to a message when its scope is busy, and admission limits.

The decisions (plain Python); the turns apply them (``nekoflow.turns.flow_store`` writes merged
and superseded turns, ``nekoflow.turns.notice`` sends the rate-limit reply)."""

from nekoflow.flow.policy import FlowConfig, FlowPolicy, OnBusy, parse_flow_config

__all__ = ["FlowConfig", "FlowPolicy", "OnBusy", "parse_flow_config"]
