"""quantdesk: tests."""
