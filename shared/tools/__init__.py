"""Tools the agents call: typed functions with a JSON schema, run as activities."""
