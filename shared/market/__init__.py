"""quantdesk: market."""
