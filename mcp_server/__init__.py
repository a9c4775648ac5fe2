"""The MCP server (`codeagent serve`): a thin adapter over `codeagent.query` and the sandbox.

Schemas, argument checks, limits and error mapping live here; every answer comes from the
query engine or `codeagent.query.sandbox`.
"""
