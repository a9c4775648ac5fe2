"""codeagent: an incremental, content-addressed code index served over MCP."""

__version__ = "0.1.0"
