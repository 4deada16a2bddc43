"""quantdesk: cli."""
