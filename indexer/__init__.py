"""The build side: walk a tree, hash, parse into shards, write manifests, assemble."""
