"""How a search is ranked (filled in below once the modules settle)."""
