"""codeagent mcp_server package."""
