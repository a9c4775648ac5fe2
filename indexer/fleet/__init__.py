"""The fleet build: many repositories into one store, each distinct content parsed once, on a
process pool or a Ray cluster (`codeagent org build`, docs/org.md)."""
