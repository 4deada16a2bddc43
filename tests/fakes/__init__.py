"""Test doubles that speak real wire protocols, so tests exercise the real SDKs."""
