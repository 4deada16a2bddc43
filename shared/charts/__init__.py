"""quantdesk: charts."""
