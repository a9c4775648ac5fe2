"""Sharing indexes: publish a store's index to a remote and sync it back, only missing objects
moving (remote.py: the layout and the backends' protocol; publish, sync, transfer)."""
