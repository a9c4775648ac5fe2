"""The MCP tools, one module per group: files, search, navigate, graph, engine. Each public
method of a group class is one tool; app.TOOLS lists them in tools/list order."""
