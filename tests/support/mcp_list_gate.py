"""A stdio pipe between hearth and a real MCP server that controls when hearth learns the
server's tool list, for the fail-closed tests.

    python3 mcp_list_gate.py <gate file> <announce file> <server command> [args...]

Every line goes through unchanged, except that the server's answers to `tools/list` wait
while <gate file> does not exist, and that whenever <announce file> appears, the pipe tells
hearth `notifications/tools/list_changed` (as a server does when its tools change) and
deletes it. With HEARTH_TEST_MCP_CALLS set, every `tools/call` request is also appended to
that file, one JSON line each, so a test can count the calls that reached the server.
"""

import json
import os
import subprocess
import sys
import threading
import time

gate, announce, command = sys.argv[1], sys.argv[2], sys.argv[3:]
server = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
list_requests = set()
call_log = os.environ.get("HEARTH_TEST_MCP_CALLS")
write_lock = threading.Lock()


def to_hearth(line):
    with write_lock:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()


def from_hearth():
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
            if message.get("method") == "tools/list":
                list_requests.add(json.dumps(message.get("id")))
            if call_log and message.get("method") == "tools/call":
                with open(call_log, "a") as log:
                    log.write(json.dumps(message) + "\n")
        except ValueError:
            pass
        server.stdin.write(line)
        server.stdin.flush()
    server.stdin.close()


def from_server():
    for line in server.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            message = {}
        if isinstance(message, dict) and json.dumps(message.get("id")) in list_requests:
            while not os.path.exists(gate):
                time.sleep(0.05)
        to_hearth(line)
    os._exit(0)


def announcer():
    while True:
        if os.path.exists(announce):
            os.remove(announce)
            notice = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
            to_hearth((json.dumps(notice) + "\n").encode())
        time.sleep(0.05)


threading.Thread(target=from_hearth, daemon=True).start()
threading.Thread(target=announcer, daemon=True).start()
from_server()
