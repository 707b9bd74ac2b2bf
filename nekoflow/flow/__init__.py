"""Conversation flow: what happens to a message when its scope is busy, and admission limits."""

from nekoflow.flow.policy import FlowConfig, FlowPolicy, OnBusy, parse_flow_config

__all__ = ["FlowConfig", "FlowPolicy", "OnBusy", "parse_flow_config"]
