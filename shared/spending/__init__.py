"""What model calls cost, and the limits runs and books may spend."""
