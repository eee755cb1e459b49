"""Native implementations of the canonical wikidata.* tools (registered with the gateway)."""
