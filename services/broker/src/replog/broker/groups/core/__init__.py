"""The group coordinator's pure core: group state machine, offsets table, record encoding, placement."""
