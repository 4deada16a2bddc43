"""quantdesk: activities."""
