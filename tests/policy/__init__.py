"""Tests of tomori.policy: limits, overrides and the metrics they rest on."""
