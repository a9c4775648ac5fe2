"""MCP clients: `codeagent install` writes codeagent into a client's own settings file
(registry.py says where and in what format, formats.py edits it keeping everything else),
`codeagent doctor` starts the configured server as the client would and checks it over MCP,
hooks.py installs the agents' grep/glob hooks (Claude Code, Gemini CLI, Codex CLI), and
hook_runner.py is the small process those hooks start."""
