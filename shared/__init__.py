"""quantdesk: shared."""
