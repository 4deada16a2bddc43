"""The research data layer: typed records, vendors, routing, as-of reads."""
