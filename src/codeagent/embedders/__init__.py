"""Optional embedders that need extra packages (see the `neural` extra)."""
