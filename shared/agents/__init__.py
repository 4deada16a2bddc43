"""quantdesk: agents."""
