"""quantdesk: storage."""
