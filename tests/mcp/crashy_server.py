"""A small MCP server for fuseraft's MCP tests, written with Python's `mcp` package.

Tools: `add` (arithmetic, so a result is checkable), `has_env` (whether a variable reached
the server, without showing its value), `wait` (a slow call) and `crash` (the process
exits mid-call, as a crashing server would). Runs over stdio, or over streamable HTTP with `--http PORT`.
"""

import os
import sys
import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("crashy")


@server.tool()
def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"{a} + {b} = {a + b}"


@server.tool()
def has_env(name: str) -> str:
    """Say whether an environment variable is set in this server's process."""
    return f"{name} is {'set' if name in os.environ else 'unset'}"


@server.tool()
def wait(seconds: float) -> str:
    """Answer after `seconds`: a call that outlasts its time limit, or a cancelled run."""
    time.sleep(seconds)
    return f"waited {seconds} s"


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of the call."""
    sys.stderr.write("crashy: exiting on purpose in the middle of `crash`\n")
    sys.stderr.flush()
    os._exit(3)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
