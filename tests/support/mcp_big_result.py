"""A stdio MCP server (the protocol's JSON-RPC lines, standard library only) with one tool,
`answer`, whose result is as large as asked:

    python3 mcp_big_result.py

`tools/call` of `answer` with `{"megabytes": N}` answers one text part of N MiB: the line
"the start of a long answer", then "x" repeated, written in pieces as a server streaming a
large result would. Every other request gets an empty result.
"""

import json
import sys

TOOL = {
    "name": "answer",
    "description": "Answers with as many megabytes of text as asked",
    "inputSchema": {
        "type": "object",
        "properties": {"megabytes": {"type": "number"}},
        "required": ["megabytes"],
    },
}
START = "the start of a long answer\n"


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def send_big_result(request_id, megabytes):
    size = int(megabytes * 1024 * 1024)
    head = json.dumps({"jsonrpc": "2.0", "id": request_id,
                       "result": {"content": [{"type": "text", "text": "@"}]}})
    before, after = head.split('"@"')
    out = sys.stdout
    out.write(before + '"' + json.dumps(START)[1:-1])
    piece = "x" * (1024 * 1024)
    left = size - len(START)
    while left > 0:
        out.write(piece[:min(left, len(piece))])
        left -= len(piece)
    out.write('"' + after + "\n")
    out.flush()


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if "id" not in message or "method" not in message:
        continue
    method, request_id = message["method"], message["id"]
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": request_id, "result": {
            "protocolVersion": message["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "big-result", "version": "1.0.0"},
        }})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": request_id, "result": {"tools": [TOOL]}})
    elif method == "tools/call" and message["params"]["name"] == "answer":
        send_big_result(request_id, message["params"]["arguments"]["megabytes"])
    else:
        send({"jsonrpc": "2.0", "id": request_id, "result": {}})
