"""quantdesk: ta."""
