"""Files -> notes -> chunks. Pure: no I/O beyond reading the vault."""
